/*
 * profile_cmd.h - `faultline-probe profile [--duration 30s] [-o FILE]
 * [--rate 99] [--pid PID | --cgroup PATH] [--unwind dwarf|fp]`: profile
 * every CPU of this host once, without Redis (profile_oneshot), and write
 * a flame graph, folded stacks or pprof.
 */
#ifndef FL_PROFILE_CMD_H
#define FL_PROFILE_CMD_H

/*
 * Run the command with its arguments (argv[0] is "profile").  Returns the
 * exit status: 0, 1 (the profiler or the file failed: logged), 2 (usage).
 */
int profile_cmd(int argc, char **argv);

#endif
