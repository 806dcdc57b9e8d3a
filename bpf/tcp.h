/*
 * tcp.h - layout shared by bpf/tcp.bpf.c and probes/tcp.c.
 *
 * Bad checksums and retransmissions are counted per peer address (and per
 * receiving interface for checksums) in bounded hash tables: these are
 * rare events, attribution needs the address, and a full table is counted
 * (tcp_peer_overflow), never silently lossy.
 */
#ifndef FL_BPF_TCP_H
#define FL_BPF_TCP_H

#define TCP_PEERS_MAX 1024

struct tcp_peer_key {
	__u32 ifindex;		/* receiving interface (0 for retransmits) */
	__u16 family;		/* AF_INET or AF_INET6 */
	__u16 pad;
	__u8 addr[16];		/* IPv4 in the first 4 bytes */
};

#endif
