/*
 * test_prom.c - Prometheus text exposition of a snapshot.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "prom.h"

static const char *count_of(const char *hay, const char *needle, int *n)
{
	const char *p = hay;

	*n = 0;
	while ((p = strstr(p, needle))) {
		(*n)++;
		p++;
	}
	return hay;
}

Test(prom, renders_counters_gauges_and_histograms)
{
	struct snapshot s;
	struct strbuf out = STRBUF_INIT;
	struct series *h;
	int n;

	snapshot_init(&s, "h", 1, 1000, 0, 1);
	snapshot_add_counter(&s, "tcp.in_csum_errors", 7, NULL);
	snapshot_add_gauge(&s, "tcp.curr_estab", 12, NULL);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
			 NULL);
	hist_record_n(h->hist, 1000, 3);	/* 1 us */
	hist_record_n(h->hist, 2000000, 1);	/* 2 ms */
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sd\"b", "op", "write",
			 NULL);
	hist_record(h->hist, 5);
	prom_render(&s, &out);
	const char *t = strbuf_str(&out);

	cr_assert(strstr(t, "# TYPE faultline_tcp_in_csum_errors_total counter\n"
			    "faultline_tcp_in_csum_errors_total 7\n"), "%s", t);
	cr_assert(strstr(t, "faultline_tcp_curr_estab 12\n"), "%s", t);
	count_of(t, "# TYPE faultline_block_latency_seconds histogram", &n);
	cr_assert_eq(n, 1, "one TYPE line per metric name");
	cr_assert(strstr(t, "faultline_block_latency_seconds_bucket{device=\"sda\",op=\"read\","
			    "le=\"+Inf\"} 4\n"), "%s", t);
	cr_assert(strstr(t, "faultline_block_latency_seconds_count{device=\"sda\",op=\"read\"} 4"));
	cr_assert(strstr(t, "faultline_block_latency_seconds_sum{device=\"sda\",op=\"read\"} "
			    "0.002003\n"), "%s", t);
	/* cumulative: the 2 ms bucket line carries 4 */
	cr_assert(strstr(t, "le=\"0.002031615\"} 4\n"), "%s", t);
	cr_assert(strstr(t, "device=\"sd\\\"b\""), "label values are escaped: %s", t);
	strbuf_release(&out);
	snapshot_free(&s);
}
