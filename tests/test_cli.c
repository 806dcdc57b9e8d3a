/*
 * test_cli.c - the faultline command's contract: every subcommand answers
 * --help with its usage and exit 0 without touching Redis, a bad argument
 * or subcommand is exit 2 with a message, and `top` on a host no probe
 * registered says so and exits 1 instead of waiting forever.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "model/profile.h"
#include "model/snapshot.h"
#include "store/profile_store.h"
#include "store/store.h"
#include "core/timeutil.h"

/* Run faultline with args (Redis pointed nowhere); its exit status. */
static int run(const char *args)
{
	return test_sh("timeout 10 %s/faultline %s --redis unix:///nonexistent/redis.sock "
		       ">/dev/null 2>&1", test_out_dir(), args);
}

Test(cli, help_is_exit_0_everywhere_without_redis)
{
	static const char *const helps[] = {
		"top --help", "silence --help", "silence add --help", "silence list --help",
		"deploy --help", "deploy mark --help", "rules --help", "rules test --help",
		"rules check --help", "drive --help", "drive inspect --help", "report --help",
		"report wear --help", "profile --help", "profile burst --help", "metrics --help",
		"sim --help", "usage --help",
	};
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		cr_expect_eq(run(helps[i]), 0, "faultline %s: not exit 0", helps[i]);
}

Test(cli, bad_arguments_are_exit_2)
{
	static const char *const bad[] = {
		"silence bogus", "deploy bogus", "rules bogus x", "report wear --verdict bogus",
		"profile burst --rate 0", "profile burst --for 1ms", "profile burst --bogus",
		"profile burst extra", "top --interval 1ms", "profile --top bogus",
		"profile --top 0", "profile -o x.svg --cum", "profile --io --hourly",
		"usage --retention s1=0", "usage --retention p1=1h", "usage --bogus",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(run(bad[i]), 2, "faultline %s: not exit 2", bad[i]);
}

/* `faultline usage` projects at the probe's own default retention, not a copy that drifts. */
Test(cli, usage_defaults_are_the_probes_retention)
{
	cr_assert_eq(test_sh("cd %s && want=$(./faultline-probe --print-config | "
			     "sed -n '/^retention:/,/^[a-z]/s/^  \\([a-z0-9]*\\): *\\([0-9a-z]*\\).*/\\1=\\2/p' | "
			     "paste -sd, -) && test -n \"$want\" && "
			     "./faultline usage --help | tr -d ' \\n' | grep -qF \"(default$want,\" || "
			     "{ echo \"probe retention: $want\" >&2; exit 1; }", test_out_dir()), 0,
		     "faultline usage --help does not state the probe's default retention");
}

Test(cli, top_of_an_unknown_host_says_so_and_exits, .timeout = 60)
{
	struct test_redis redis;
	struct store_opts o = { .timeout_ns = NSEC_PER_SEC };
	struct snapshot s;
	struct store *st;
	char err[256], out[600], buf[1024] = "";
	FILE *f;
	int rc;

	cr_assert_eq(test_redis_start(&redis), 0);
	o.url = redis.url;
	st = store_open(&o, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	snapshot_init(&s, "real-1", time_wall_ns() / NSEC_PER_MSEC, 1000, 1, 1);
	store_put_snapshot(st, &s);
	snapshot_free(&s);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
	snprintf(out, sizeof(out), "%s/top.err", redis.dir);
	rc = test_sh("timeout 30 %s/faultline top --redis %s --host nosuch --interval 100ms "
		     ">/dev/null 2>%s", test_out_dir(), redis.url, out);
	f = fopen(out, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		buf[n] = '\0';
		fclose(f);
	}
	test_redis_destroy(&redis);
	cr_assert_eq(rc, 1, "exit %d (124: it waited until killed): %s", rc, buf);
	cr_assert(strstr(buf, "no probe has registered host 'nosuch'"), "%s", buf);
	cr_assert(strstr(buf, "known hosts (1): real-1"), "%s", buf);
}

Test(cli, the_metric_reference_in_docs_is_the_catalog)
{
	/* docs/metrics.md's table is exactly what `faultline metrics --markdown` prints */
	int rc = test_sh("cd %s/.. 2>/dev/null; root=$(git rev-parse --show-toplevel 2>/dev/null "
			 "|| pwd); %s/faultline metrics --markdown > /tmp/fl-metrics.$$ && "
			 "sed -n '/^| metric/,/^$/p' \"$root/docs/metrics.md\" | sed '/^$/d' | "
			 "diff /tmp/fl-metrics.$$ - >&2; r=$?; rm -f /tmp/fl-metrics.$$; exit $r",
			 test_out_dir(), test_out_dir());

	cr_assert_eq(rc, 0, "docs/metrics.md differs from the catalog: regenerate its table "
		     "with `faultline metrics --markdown`");
}

/*
 * The man pages render without a groff warning, and each documents every
 * long option its binary's --help lists (and the faultline command every
 * subcommand), so a new option cannot ship undocumented.
 */
Test(cli, man_pages_render_and_cover_every_option)
{
	static const char *const bins[] = { "faultline-probe:8", "faultline-rules:8", "faultline-web:8",
					    "faultline-alerter:8", "faultline:1" };

	if (test_sh("command -v groff >/dev/null") != 0)
		cr_skip_test("groff is not installed");
	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		char name[64], *sec;

		snprintf(name, sizeof(name), "%s", bins[i]);
		sec = strchr(name, ':');
		*sec++ = '\0';
		cr_assert_eq(test_sh("cd %s/.. && out=$(groff -man -ww -z man/%s.%s 2>&1) && "
				     "test -z \"$out\" || { echo \"$out\" >&2; exit 1; }",
				     test_out_dir(), name, sec), 0, "man/%s.%s has groff warnings",
			     name, sec);
		cr_assert_eq(test_sh("cd %s/.. && for o in $(%s/%s --help | grep -oE -- "
				     "'--[a-z][a-z-]+' | sort -u); do "
				     "grep -qF -- \"$(echo $o | sed 's/-/\\\\-/g')\" man/%s.%s || "
				     "{ echo \"man/%s.%s lacks $o\" >&2; exit 1; }; done",
				     test_out_dir(), test_out_dir(), name, name, sec, name, sec), 0,
			     "man/%s.%s does not document every option of --help", name, sec);
	}
	/* every subcommand of the commands[] table has its entry */
	cr_assert_eq(test_sh("cd %s/.. && for c in $(%s/faultline --help | "
			     "sed -n 's/^  \\([a-z]\\+\\) .*/\\1/p'); do "
			     "grep -q \"^\\.B $c\" man/faultline.1 || "
			     "{ echo \"man/faultline.1 lacks $c\" >&2; exit 1; }; done",
			     test_out_dir(), test_out_dir()), 0,
		     "man/faultline.1 does not describe every command");
}

/* Bash completion offers subcommands and, from each binary's --help, its options. */
Test(cli, bash_completion_offers_commands_and_options)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "faultline ru", "rules" },
		{ "faultline al", "alerts" },
		{ "faultline silence ''", "add update query list expire" },
		{ "faultline rules ''", "check test" },
		{ "faultline deploy mark --ser", "--service" },
		{ "faultline metrics --m", "--markdown" },
		{ "faultline-rules --st", "--stale" },
		{ "faultline-probe --config-r", "--config-reference" },
		{ "faultline-alerter --log-level i", "info" },
	};

	if (access("/usr/share/bash-completion/bash_completion", R_OK))
		cr_skip_test("bash-completion is not installed (make deps installs it)");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(test_sh("cd %s/.. && test \"$(tests/tools/complete.sh %s %s)\" = '%s'",
				     test_out_dir(), test_out_dir(), cases[i].line, cases[i].want), 0,
			     "completing '%s' did not offer exactly '%s'", cases[i].line,
			     cases[i].want);
}

Test(cli, install_stays_inside_destdir_and_uninstall_removes_it, .timeout = 120)
{
	char dir[] = "/tmp/fl-install.XXXXXX";
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	rc = test_sh("cd %s/.. && make --no-print-directory -s install OUT=%s DESTDIR=%s "
		     "PREFIX=/usr >/dev/null 2>&1", test_out_dir(), test_out_dir(), dir);
	cr_assert_eq(rc, 0, "make install failed");
	cr_assert_eq(test_sh("test -x %s/usr/bin/faultline-rules && "
			     "test -f %s/etc/faultline/rules/faultline.yaml && "
			     "test -f %s/etc/faultline/probe.yaml && "
			     "test -f %s/usr/share/faultline/runbooks/host-silent.md && "
			     "test -f %s/usr/share/man/man8/faultline-probe.8 && "
			     "test -f %s/usr/share/bash-completion/completions/faultline-rules", dir, dir,
			     dir, dir, dir, dir), 0, "something is missing from the staged install");
	/* the installed engine finds nothing of the source tree: from /, it says where it looked */
	cr_assert_eq(test_sh("cd / && %s/usr/bin/faultline-rules --once --redis "
			     "unix:///nonexistent 2>&1 | grep -q '/etc/faultline'", dir), 0);
	rc = test_sh("cd %s/.. && make --no-print-directory -s uninstall OUT=%s DESTDIR=%s "
		     "PREFIX=/usr >/dev/null 2>&1", test_out_dir(), test_out_dir(), dir);
	cr_assert_eq(rc, 0, "make uninstall failed");
	cr_assert_eq(test_sh("test -z \"$(find %s -type f)\"", dir), 0,
		     "uninstall left files behind");
	test_sh("rm -rf %s", dir);
}

Test(cli, logs_carry_syslog_priorities_when_stderr_is_the_journal)
{
	/* systemd sets JOURNAL_STREAM to stderr's device:inode; errors are then <3> */
	cr_assert_eq(test_sh("f=$(mktemp) && JOURNAL_STREAM=$(stat -c '%%d:%%i' $f) "
			     "%s/faultline-rules --rules /nonexistent 2>>$f; "
			     "grep -q '^<3>error: ' $f; r=$?; rm -f $f; exit $r", test_out_dir()), 0,
		     "no <3> priority on an error line with JOURNAL_STREAM set");
	/* and plain time-stamped lines otherwise */
	cr_assert_eq(test_sh("%s/faultline-rules --rules /nonexistent 2>&1 | "
			     "grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T.*faultline-rules\\[[0-9]+\\] error: '",
			     test_out_dir()), 0);
}

/*
 * The Grafana dashboard loads as a dashboard model and queries only metrics
 * faultline has, in their units (tests/tools/check_dashboard.py; PromQL too
 * where promtool is installed); and the checker is not blind: a query on a
 * metric that does not exist, or a counter graphed raw, fails it.
 */
Test(cli, grafana_dashboard_is_valid_and_speaks_the_vocabulary)
{
	cr_assert_eq(test_sh("cd %s/.. && python3 tests/tools/check_dashboard.py "
			     "etc/grafana/faultline-host.json %s/faultline >&2", test_out_dir(),
			     test_out_dir()), 0, "etc/grafana/faultline-host.json does not check");
	cr_assert_eq(test_sh("cd %s/.. && python3 tests/tools/check_dashboard.py "
			     "etc/grafana/faultline-host-web.json %s/faultline >&2", test_out_dir(),
			     test_out_dir()), 0, "etc/grafana/faultline-host-web.json does not check");
	cr_assert_eq(test_sh("cd %s/.. && d=$(mktemp) && sed 's/faultline_tcp_bad_csum_total/"
			     "faultline_tcp_bad_checksums_total/' etc/grafana/faultline-host.json "
			     "> $d && python3 tests/tools/check_dashboard.py $d %s/faultline | "
			     "grep 'faultline_tcp_bad_checksums_total is not a faultline metric' "
			     ">/dev/null; "
			     "r=$?; rm -f $d; exit $r", test_out_dir(), test_out_dir()), 0,
		     "an unknown metric passed the dashboard check");
	cr_assert_eq(test_sh("cd %s/.. && d=$(mktemp) && sed 's/\"rate(faultline_tcp_in_csum_/"
			     "\"(faultline_tcp_in_csum_/' etc/grafana/faultline-host.json > $d && "
			     "! cmp -s $d etc/grafana/faultline-host.json && "
			     "python3 tests/tools/check_dashboard.py $d %s/faultline | "
			     "grep 'counter faultline_tcp_in_csum_errors_total outside rate' "
			     ">/dev/null; "
			     "r=$?; rm -f $d; exit $r", test_out_dir(), test_out_dir()), 0,
		     "a raw counter passed the dashboard check");
}

/* --log-format json and logfmt: one parseable line per message, for log shippers. */
Test(cli, logs_in_json_and_logfmt)
{
	/* json: each line one object with ts, level, prog, pid and msg */
	cr_assert_eq(test_sh("%s/faultline-rules --log-format json --rules /nonexistent 2>&1 "
			     ">/dev/null | python3 -c 'import json, sys\n"
			     "ls = [json.loads(l) for l in sys.stdin]\n"
			     "assert ls and all(set(l) == {\"ts\", \"level\", \"prog\", \"pid\", "
			     "\"msg\"} for l in ls), ls\n"
			     "assert any(l[\"level\"] == \"error\" and "
			     "\"/nonexistent\" in l[\"msg\"] for l in ls), ls'", test_out_dir()), 0,
		     "--log-format json did not write one JSON object per line");
	cr_assert_eq(test_sh("%s/faultline-rules --log-format logfmt --rules /nonexistent 2>&1 "
			     ">/dev/null | grep -Eq '^ts=[0-9T:.-]+Z level=error "
			     "prog=faultline-rules pid=[0-9]+ msg=\".*nonexistent'", test_out_dir()),
		     0, "--log-format logfmt did not write a logfmt line");
	cr_assert_eq(test_sh("%s/faultline-probe --log-format xml 2>/dev/null", test_out_dir()),
		     2, "a bad --log-format is not a usage error");
}

static int deb_installed_by_us;

static void purge_deb(void)
{
	if (deb_installed_by_us)
		test_sh("dpkg --purge faultline >/dev/null 2>&1");
	deb_installed_by_us = 0;
}

/*
 * make deb: lintian finds no error (scripts/deb.sh fails on one), the
 * package installs with dpkg -i, its units start the installed binaries
 * with the installed configs, and dpkg --purge leaves nothing behind.
 */
Test(cli, debian_package_installs_and_purges, .fini = purge_deb, .timeout = 600)
{
	if (!test_is_root())
		cr_skip_test("dpkg -i needs root");
	if (test_sh("dpkg-query -W -f='${Status}' faultline 2>/dev/null | grep -q installed") == 0)
		cr_skip_test("a faultline package is installed on this machine; not touching it");
	cr_assert_eq(test_sh("cd %s/.. && make --no-print-directory -s deb OUT=%s >&2",
			     test_out_dir(), test_out_dir()), 0, "make deb failed");
	deb_installed_by_us = 1;
	cr_assert_eq(test_sh("dpkg -i %s/faultline_*.deb >&2", test_out_dir()), 0,
		     "dpkg -i failed");
	cr_assert_eq(test_sh("getent passwd faultline >/dev/null && "
			     "test -f /usr/lib/sysusers.d/faultline.conf && "
			     "grep -q '^User=faultline' /lib/systemd/system/faultline-rules.service"), 0,
		     "the package did not make the faultline user the units run as");
	cr_assert_eq(test_sh("/usr/bin/faultline-rules --version && /usr/bin/faultline --version && "
			     "/usr/bin/faultline-alerter --version && "
			     "/usr/bin/faultline-probe --version >/dev/null && "
			     "/usr/bin/faultline-web --version >/dev/null"), 0);
	/* every unit starts an installed binary; the configs are conffiles in /etc/faultline */
	cr_assert_eq(test_sh("for u in /lib/systemd/system/faultline-*.service; do "
			     "b=$(sed -n 's/^ExecStart=\\([^ ]*\\).*/\\1/p' $u); "
			     "test -x \"$b\" || { echo \"$u starts '$b'\" >&2; exit 1; }; done"), 0,
		     "a unit's ExecStart is not an installed binary");
	/* the engine's unit points relative runbooks at the installed ones */
	cr_assert_eq(test_sh("b=$(grep -o 'runbook-base file://[^ ]*' "
			     "/lib/systemd/system/faultline-rules.service | sed 's|.*file://||') && "
			     "test -f \"$b/runbooks/host-silent.md\""), 0,
		     "the rules unit's --runbook-base does not hold the runbooks");
	cr_assert_eq(test_sh("dpkg-query -W -f='${Conffiles}' faultline | "
			     "grep -q '/etc/faultline/probe.yaml' && "
			     "dpkg-query -W -f='${Conffiles}' faultline | "
			     "grep -q '/etc/faultline/rules/faultline.yaml'"), 0,
		     "the configs are not conffiles");
	/* installed, the engine finds its rules in /etc/faultline from anywhere */
	cr_assert_eq(test_sh("cd / && faultline-rules --once --redis unix:///nonexistent 2>&1 | "
			     "grep -q 'unix:///nonexistent'"), 0);
	cr_assert_eq(test_sh("zcat /usr/share/man/man8/faultline-probe.8.gz | grep -qF 'log\\-format' && "
			     "test -f /usr/share/bash-completion/completions/faultline && "
			     "test -f /usr/share/faultline/grafana/faultline-host.json"), 0);
	cr_assert_eq(test_sh("dpkg --purge faultline >&2"), 0, "dpkg --purge failed");
	deb_installed_by_us = 0;
	cr_assert_eq(test_sh("test ! -e /usr/bin/faultline-rules && test ! -e /etc/faultline && "
			     "test ! -e /usr/share/faultline && "
			     "test ! -e /lib/systemd/system/faultline-probe.service"), 0,
		     "purge left files behind");
}

Test(cli, systemd_units_verify)
{
	if (test_sh("command -v systemd-analyze >/dev/null") != 0)
		cr_skip_test("systemd-analyze is not installed");
	/* the units as installed, pointing at this build's binaries */
	cr_assert_eq(test_sh("d=$(mktemp -d) && cd %s/.. && for u in etc/systemd/*.service; do "
			     "sed \"s|/usr/bin/faultline|$(pwd)/%s/faultline|\" $u > $d/$(basename $u); "
			     "done && out=$(systemd-analyze verify $d/*.service 2>&1); r=$?; "
			     "rm -rf $d; [ -n \"$out\" ] && echo \"$out\" >&2; "
			     "[ $r = 0 ] && [ -z \"$out\" ]", test_out_dir(), test_out_dir()), 0,
		     "systemd-analyze verify complains about etc/systemd/*.service");
	/*
	 * least privilege, as systemd scores it (lower is better): the central
	 * parts and Redis at most 2.5, the probe (root, for the kernel) at most 5;
	 * and no unit needs a directory only the local Redis makes
	 */
	cr_assert_eq(test_sh("cd %s/.. && for u in rules:2.5 alerter:2.5 web:2.5 redis:2.5 probe:5.0; do "
			     "f=etc/systemd/faultline-${u%%%%:*}.service; "
			     "s=$(systemd-analyze security --offline=yes $f 2>/dev/null | "
			     "sed -n 's/.*exposure level for .*: \\([0-9.]*\\).*/\\1/p'); "
			     "echo \"$f: $s\" >&2; [ -n \"$s\" ] && "
			     "awk -v s=$s -v m=${u#*:} 'BEGIN { exit !(s <= m) }' || exit 1; done && "
			     "! grep -l '^ReadWritePaths=/run/faultline' etc/systemd/faultline-probe.service "
			     "etc/systemd/faultline-rules.service etc/systemd/faultline-alerter.service",
			     test_out_dir()), 0,
		     "a unit's systemd-analyze security exposure is over its bound");
}

Test(cli, options_that_would_be_ignored_are_errors)
{
	/* --metrics-addr with --once: nothing would be served */
	cr_expect_eq(test_sh("%s/faultline-rules --once --metrics-addr 127.0.0.1:1 "
			     "--rules etc/rules/faultline.yaml >/dev/null 2>&1", test_out_dir()), 2);
	/* what only a running engine uses: no checkpoint restored, no backlog, no Redis write */
	cr_expect_eq(test_sh("%s/faultline-rules --once --wait-replicas 1 "
			     "--rules etc/rules/faultline.yaml >/dev/null 2>&1", test_out_dir()), 2);
	cr_expect_eq(test_sh("%s/faultline-rules --replay 1,2 --for-grace-period 1m "
			     "--rules etc/rules/faultline.yaml >/dev/null 2>&1", test_out_dir()), 2);
	cr_expect_eq(test_sh("%s/faultline-rules --once --alert-backlog-max 5 "
			     "--rules etc/rules/faultline.yaml >/dev/null 2>&1", test_out_dir()), 2);
	/* a spool.path the probe could not write at its stop: refused at its start */
	cr_expect_eq(test_sh("f=$(mktemp) && printf 'spool:\\n  path: /nonexistent/dir/x.spool\\n"
			     "bpf: false\\nmetrics_addr: \"\"\\n' > $f && "
			     "timeout 10 %s/faultline-probe --config $f 2>&1 | grep -q 'cannot write in "
			     "/nonexistent/dir'; r=$?; rm -f $f; exit $r", test_out_dir()), 0);
}

/*
 * `rules check` reads its files in order into one rule set, as
 * faultline-rules loads them: a file may select what an earlier one
 * records, not what a later one does.
 */
Test(cli, rules_check_reads_files_in_order_as_the_daemon_does, .timeout = 30)
{
	char dir[] = "/tmp/fl-check.XXXXXX";

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(test_sh("printf 'groups:\\n  - name: a\\n    rules:\\n      - record: "
			     "host:x:rate1m\\n        expr: rate(faultline_tcp_in_segs_total[1m])\\n'"
			     " > %s/rec.yaml && printf 'groups:\\n  - name: b\\n    rules:\\n"
			     "      - alert: X\\n        expr: host:x:rate1m > 1\\n' > %s/alert.yaml",
			     dir, dir), 0);
	cr_expect_eq(test_sh("%s/faultline rules check %s/rec.yaml %s/alert.yaml >/dev/null",
			     test_out_dir(), dir, dir), 0, "a later file selects an earlier record");
	cr_expect_eq(test_sh("%s/faultline rules check %s/alert.yaml %s/rec.yaml 2>&1 | grep -q "
			     "\"alert.yaml:5:15: expr: unknown metric 'host:x:rate1m'\"",
			     test_out_dir(), dir, dir), 0, "an earlier file cannot select a later record");
	cr_expect_neq(test_sh("%s/faultline rules check %s/rec.yaml %s/rec.yaml >/dev/null 2>&1",
			      test_out_dir(), dir, dir), 0, "a name recorded twice across files");
	test_sh("rm -rf %s", dir);
}

/* file scope, so that .fini removes it when an assertion ends the test early */
static struct test_redis top_redis;

static void top_redis_destroy(void)
{
	test_redis_destroy(&top_redis);
}

/*
 * `faultline profile --top` reads like `pprof -top`: flat, flat%, sum%, cum,
 * cum%, sorted by flat (the leaf), or by cum with --cum.
 */
Test(cli, profile_top_is_sorted_by_flat_like_pprof, .timeout = 60, .fini = top_redis_destroy)
{
	const char *leaf_a[] = { "main", "work", "hash" };	/* 600 samples, leaf hash */
	const char *leaf_b[] = { "main", "io_wait" };		/* 400 samples, leaf io_wait */
	struct store_opts o = { .timeout_ns = NSEC_PER_SEC };
	char err[256], out[300], buf[4096] = "";
	struct profile p;
	struct store *st;
	size_t len, n;
	char *blob;
	FILE *f;

	cr_assert_eq(test_redis_start(&top_redis), 0);
	o.url = top_redis.url;
	st = store_open(&o, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	profile_init(&p, "prof-1");
	p.rate_hz = 99;
	p.duration_ms = 10000;
	p.ts_ms = time_wall_ns() / NSEC_PER_MSEC - 60000;
	profile_add(&p, "api.service", "api", 42, leaf_a, 3, 600);
	profile_add(&p, "api.service", "api", 42, leaf_b, 2, 400);
	cr_assert_eq(profile_encode(&p, &blob, &len), 0);
	cr_assert_eq(profile_store_put(st, "prof-1", 0, p.ts_ms, 0, blob, len), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
	free(blob);
	profile_free(&p);
	for (int cum = 0; cum < 2; cum++) {
		snprintf(out, sizeof(out), "%s/top%d.out", top_redis.dir, cum);
		cr_assert_eq(test_sh("%s/faultline profile --redis %s --host prof-1 --top 3 %s "
				     ">%s 2>/dev/null", test_out_dir(), top_redis.url,
				     cum ? "--cum" : "", out), 0);
		f = fopen(out, "r");
		cr_assert_not_null(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		cr_assert(strstr(buf, "flat%") && strstr(buf, "sum%") && strstr(buf, "cum%"), "%s",
			  buf);
		if (!cum) {
			/* hash (600 flat) first, then io_wait (400); main has no flat */
			cr_assert(strstr(buf, "hash") && strstr(buf, "io_wait") &&
				  strstr(buf, "hash") < strstr(buf, "io_wait"), "%s", buf);
			cr_assert(strstr(buf, "60.00%  60.00%"), "hash's flat% and sum%%:\n%s", buf);
			cr_assert(strstr(buf, "40.00% 100.00%"), "io_wait's sum%% is 100%%:\n%s", buf);
		} else {
			/* main is on every stack: cum 1000, first */
			cr_assert(strstr(buf, "main") && strstr(buf, "main") < strstr(buf, "hash"),
				  "%s", buf);
			cr_assert(strstr(buf, "1000 100.00%  main"), "%s", buf);
		}
	}
}

/* The output of a shell command (at most len - 1 bytes) into buf; its exit status. */
static int capture(char *buf, size_t len, const char *cmd)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	return pclose(f);
}

/* bytes_at_retention of the fleet summary's or a host's JSON object. */
static double json_bytes(json_object *o, const char *key)
{
	json_object *v;

	cr_assert(json_object_object_get_ex(o, key, &v), "no %s in %s", key,
		  json_object_to_json_string(o));
	return (double)json_object_get_int64(v);
}

/*
 * `faultline usage --all`: the fleet's summary is the measured hosts' own
 * projections (its mean is the mean of `faultline usage HOST` of each),
 * and --sample measures that many hosts, spread, and scales to all.
 */
Test(cli, usage_all_is_the_mean_of_the_hosts_scaled_to_the_fleet, .timeout = 120,
     .fini = top_redis_destroy)
{
	static char out[1 << 20], cmd[4096];
	json_object *hosts, *fleet;
	double sum = 0, max = 0;
	size_t n;

	cr_assert_eq(test_redis_start(&top_redis), 0);
	cr_assert_eq(strncmp(top_redis.url, "unix://", 7), 0);
	cr_assert_eq(test_sh("%s/faultline sim --redis %s --hosts 6 --duration 150s --ends-now "
			     "--no-profiles >/dev/null 2>&1", test_out_dir(), top_redis.url), 0);
	/* each host on its own, named as the registry names them */
	snprintf(cmd, sizeof(cmd), "%s/faultline usage --redis %s --json $(redis-cli -s %s --scan "
		 "--pattern 'fl:{*}:host' | sed 's/^fl:{\\(.*\\)}:host$/\\1/' | sort)",
		 test_out_dir(), top_redis.url, top_redis.url + strlen("unix://"));
	cr_assert_eq(capture(out, sizeof(out), cmd), 0, "%s", cmd);
	hosts = json_tokener_parse(out);
	cr_assert_not_null(hosts, "%.500s", out);
	n = json_object_array_length(hosts);
	cr_assert_eq(n, 6, "%zu hosts", n);
	for (size_t i = 0; i < n; i++) {
		double b = json_bytes(json_object_array_get_idx(hosts, i), "bytes_at_retention");

		cr_assert_gt(b, 0);
		sum += b;
		max = b > max ? b : max;
	}
	json_object_put(hosts);

	snprintf(cmd, sizeof(cmd), "%s/faultline usage --redis %s --all --json", test_out_dir(),
		 top_redis.url);
	cr_assert_eq(capture(out, sizeof(out), cmd), 0);
	fleet = json_tokener_parse(out);
	cr_assert_not_null(fleet, "%.500s", out);
	cr_assert_eq(json_bytes(fleet, "hosts"), 6);
	cr_assert_eq(json_bytes(fleet, "measured"), 6);
	/* the fleet is the six hosts' sum (each rounded to a byte) */
	cr_assert_float_eq(json_bytes(fleet, "fleet_bytes_at_retention"), sum, 6 + sum * 1e-9,
			   "the fleet's total is not its hosts' sum %.0f: %s", sum, out);
	cr_assert_float_eq(json_bytes(fleet, "host_max_bytes"), max, 1);
	json_object_put(fleet);

	/* a sample of 2 of 6: every 3rd name, scaled to the 6 */
	snprintf(cmd, sizeof(cmd), "%s/faultline usage --redis %s --all --sample 2 --json",
		 test_out_dir(), top_redis.url);
	cr_assert_eq(capture(out, sizeof(out), cmd), 0);
	fleet = json_tokener_parse(out);
	cr_assert_not_null(fleet, "%.500s", out);
	cr_assert_eq(json_bytes(fleet, "hosts"), 6);
	cr_assert_eq(json_bytes(fleet, "measured"), 2);
	cr_assert_gt(json_bytes(fleet, "fleet_bytes_at_retention"), 0);
	json_object_put(fleet);

	/* usage errors before Redis is asked */
	cr_assert_eq(run("usage --sample 2"), 2, "--sample without --all");
	cr_assert_eq(run("usage --all web-1"), 2, "--all with a host");
	cr_assert_eq(run("usage --all --sample 0"), 2);
}
