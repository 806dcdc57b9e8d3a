/*
 * proc_maps.h - one line of /proc/PID/maps, parsed by hand.
 *
 *   55d0c1a00000-55d0c1a22000 r-xp 00002000 fd:01 1234        /usr/bin/foo
 *   start-end                 perms offset  dev   inode       path
 *
 * The profiler reads the mappings of every process it samples (symbolize.c
 * for names, unwind.c for the unwinder's tables), on hosts that start
 * processes all the time; with sscanf that parse was a third of the
 * profiler thread's instructions.  Most lines are not executable and are
 * passed over after their perms.
 */
#ifndef FL_PROC_MAPS_H
#define FL_PROC_MAPS_H

#include <stdint.h>

struct maps_line {
	uint64_t start, end, offset;
	char perms[5];		/* "r-xp" */
	const char *path;	/* into the line, blanks and '\n' cut; "" when anonymous */
};

/*
 * Parse line (its trailing newline is cut) into *m.  Returns 1 for an
 * executable mapping (perms[2] == 'x'), 0 for any other mapping (only
 * start, end and perms set), -1 for a line that is not a mapping.
 */
int maps_line_parse(char *line, struct maps_line *m);

#endif
