/*
 * proc_maps.c - one line of /proc/PID/maps; see proc_maps.h.
 */
#include "probes/proc_maps.h"

#include <string.h>

/* Hex digits at *p into *v; *p moves past them.  0, or -1 when there are none or too many. */
static int hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int n = 0;

	for (;; s++, n++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (n == 16)
			return -1;
		x = x << 4 | d;
	}
	if (!n)
		return -1;
	*v = x;
	*p = s;
	return 0;
}

/* Past one field and the blanks after it. */
static const char *next_field(const char *p)
{
	p += strcspn(p, " \t\n");
	return p + strspn(p, " \t");
}

int maps_line_parse(char *line, struct maps_line *m)
{
	const char *p = line;
	char *nl;

	if (hex(&p, &m->start) || *p++ != '-' || hex(&p, &m->end) || *p++ != ' ' ||
	    strspn(p, "rwxsp-") < 4 || (p[4] != ' ' && p[4] != '\t'))
		return -1;
	memcpy(m->perms, p, 4);
	m->perms[4] = '\0';
	if (m->perms[2] != 'x')
		return 0;
	p += 5;
	p += strspn(p, " \t");
	if (hex(&p, &m->offset))
		return -1;
	p += strspn(p, " \t");
	p = next_field(p);	/* dev */
	p = next_field(p);	/* inode */
	if ((nl = strchr(p, '\n')))
		*nl = '\0';
	m->path = p;
	return 1;
}
