/*
 * cli.h - the faultline command's subcommands, one per file in cli/, and
 * what they share.
 *
 * A subcommand is int cmd_NAME(int argc, char **argv) with argv[0] its own
 * name.  Contract: --help (anywhere) prints its usage to stdout and returns
 * 0 before touching Redis; a usage error prints why to stderr and returns
 * 2; a failure (Redis unreachable, a file unreadable) returns 1.
 */
#ifndef FL_CLI_H
#define FL_CLI_H

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;		/* one line (or two) for `faultline --help` */
};

int cmd_top(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_drive(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_silence(int argc, char **argv);
int cmd_alerts(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_deploy(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_acl(int argc, char **argv);
int cmd_usage(int argc, char **argv);

/* 1 if -h or --help is among the arguments (a subcommand's help, anywhere). */
int help_asked(int argc, char **argv);

#endif
