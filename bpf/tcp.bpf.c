// SPDX-License-Identifier: GPL-2.0
/*
 * tcp.bpf.c - who sends us corrupted TCP segments, and whom we retransmit
 * to: tcp:tcp_bad_csum and tcp:tcp_retransmit_skb (tp_btf).
 *
 * tcp_bad_csum fires when the receive path finds a bad TCP checksum; the
 * source address from the IP header and the receiving interface name the
 * path the corruption came over, and across hosts, the switch.  Only
 * events in the probe's own network namespace are counted (netns_ino; 0
 * counts every namespace), since interface indexes mean nothing outside
 * their namespace.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcp.h"

#define AF_INET 2
#define AF_INET6 10
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

const volatile __u32 netns_ino = 0;

__u64 bad_csum_total;
__u64 retrans_total;
__u64 peer_overflow;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCP_PEERS_MAX);
	__type(key, struct tcp_peer_key);
	__type(value, __u64);
} bad_csum SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCP_PEERS_MAX);
	__type(key, struct tcp_peer_key);
	__type(value, __u64);
} retrans SEC(".maps");

static __always_inline void count(void *map, struct tcp_peer_key *k)
{
	__u64 zero = 0, *v = bpf_map_lookup_elem(map, k);

	if (!v) {
		/* EEXIST from a racing CPU is fine; E2BIG (full) shows below */
		bpf_map_update_elem(map, k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, k);
		if (!v) {
			__sync_fetch_and_add(&peer_overflow, 1);
			return;
		}
	}
	__sync_fetch_and_add(v, 1);
}

SEC("tp_btf/tcp_bad_csum")
int BPF_PROG(tcp_bad_csum, const struct sk_buff *skb)
{
	struct tcp_peer_key k = {};
	struct net_device *dev = skb->dev;
	unsigned char *head = skb->head;
	__u16 nh = skb->network_header, proto = bpf_ntohs(skb->protocol);

	if (netns_ino && dev && BPF_CORE_READ(dev, nd_net.net, ns.inum) != netns_ino)
		return 0;
	__sync_fetch_and_add(&bad_csum_total, 1);
	k.ifindex = dev ? (__u32)dev->ifindex : 0;
	if (proto == ETH_P_IP) {
		struct iphdr ip;

		if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh))
			return 0;
		k.family = AF_INET;
		__builtin_memcpy(k.addr, &ip.saddr, 4);
	} else if (proto == ETH_P_IPV6) {
		struct ipv6hdr ip6;

		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh))
			return 0;
		k.family = AF_INET6;
		__builtin_memcpy(k.addr, &ip6.saddr, 16);
	}
	count(&bad_csum, &k);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb, const struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_peer_key k = {};

	if (!sk)
		return 0;
	if (netns_ino && BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) != netns_ino)
		return 0;
	__sync_fetch_and_add(&retrans_total, 1);
	k.family = sk->__sk_common.skc_family;
	if (k.family == AF_INET) {
		__u32 d = sk->__sk_common.skc_daddr;

		__builtin_memcpy(k.addr, &d, 4);
	} else if (k.family == AF_INET6) {
		BPF_CORE_READ_INTO(&k.addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
	count(&retrans, &k);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
