/*
 * config.h - YAML configuration files, with errors that point at the text.
 *
 * A file is parsed with libyaml into a small tree that remembers where each
 * node came from.  Callers then pull typed values out of maps by key; every
 * failure is reported as
 *
 *     FILE:LINE:COLUMN: KEY: what was expected, and what was found
 *
 * (lines and columns from 1), which editors and CI logs link to.  Keys a
 * caller never asked for are errors too (cfg_check_unknown), because a
 * misspelt key silently falling back to its default is how a 1 s interval
 * becomes 60 s in production.
 */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum cfg_type {
	CFG_SCALAR,
	CFG_MAP,
	CFG_SEQ,
};

/* How a scalar was written, for positions inside it (cfg_value_pos). */
enum cfg_style {
	CFG_STYLE_PLAIN,
	CFG_STYLE_QUOTED,	/* '...' or "..." */
	CFG_STYLE_BLOCK,	/* | or > */
};

struct cfg_node {
	enum cfg_type type;
	char *key;		/* key in the parent map, or NULL */
	char *value;		/* scalar text, or NULL */
	int quoted;		/* scalar was quoted (so "null" is a string) */
	enum cfg_style style;
	int line, col;
	int used;		/* looked up by a caller */
	struct cfg_node *child;	/* map entries / sequence items */
	size_t nchild;
};

struct cfg {
	char *file;		/* name used in messages */
	struct cfg_node *root;	/* a map, or NULL for an empty document */
	char *text;		/* the source, for positions inside scalars */
	size_t len;
};

/*
 * Where byte off of scalar n's value was written in the file: its line and
 * column (1-based, columns in bytes), through the quotes, a block scalar's
 * indicator and indentation (| and >), and the lines a folded or plain
 * multi-line scalar joins with spaces.  An error inside an expression or
 * template points at the character, not at the key.
 */
void cfg_value_pos(const struct cfg *c, const struct cfg_node *n, size_t off, int *line,
		   int *col);

/*
 * Parse YAML text (len bytes; name is used in messages).  Returns 0, or
 * -EINVAL with "name:line:col: reason" in err.  The document must be a map
 * (or empty).  Anchors/aliases and multiple documents are rejected.
 */
int cfg_parse(struct cfg *c, const char *name, const char *text, size_t len,
	      char *err, size_t errlen);

/*
 * Where an installed faultline keeps its configs, searched in this order
 * (`make install` puts them in SYSCONFDIR/faultline: /etc when PREFIX is
 * /usr, /usr/local/etc for the default PREFIX).
 */
#define CFG_SYSTEM_DIRS { "/etc/faultline", "/usr/local/etc/faultline" }

/*
 * The first of dirs[] (NULL-terminated, "" meaning the working directory's
 * etc/, the source tree) then CFG_SYSTEM_DIRS that holds the file rel
 * ("rules/faultline.yaml"), into buf.  Returns buf, or NULL when none does.
 */
const char *cfg_find(const char *rel, int source_tree, char *buf, size_t len);

/*
 * Read a whole file (at most 16 MiB) into a malloc'd, NUL-terminated
 * buffer.  Returns 0, or -errno / -EFBIG with the reason in err.
 */
int cfg_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* Read and parse a file. Returns 0, -errno (cannot read) or -EINVAL. */
int cfg_load_file(struct cfg *c, const char *path, char *err, size_t errlen);

void cfg_free(struct cfg *c);

/* Child of map named key (marked used), or NULL. */
const struct cfg_node *cfg_get(const struct cfg_node *map, const char *key);

/*
 * Typed getters.  Each looks key up in map; when absent, *out is left as
 * it is (the caller's default) and 0 is returned.  When present but not of
 * the type, -EINVAL is returned with a positioned message in err.  A NULL
 * map counts as empty.  Strings are malloc'd (the old *out is freed).
 */
int cfg_string(const struct cfg *c, const struct cfg_node *map, const char *key,
	       char **out, char *err, size_t errlen);
int cfg_duration(const struct cfg *c, const struct cfg_node *map, const char *key,
		 uint64_t *out_ns, char *err, size_t errlen);
int cfg_uint(const struct cfg *c, const struct cfg_node *map, const char *key,
	     uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen);
/* A number in [min, max] (NaN never is); absent leaves *out alone. */
int cfg_number(const struct cfg *c, const struct cfg_node *map, const char *key,
	       double min, double max, double *out, char *err, size_t errlen);
int cfg_bool(const struct cfg *c, const struct cfg_node *map, const char *key,
	     int *out, char *err, size_t errlen);

/*
 * Fetch a map-valued key: *out = the map node or NULL when absent.
 * -EINVAL when present but not a map.
 */
int cfg_map(const struct cfg *c, const struct cfg_node *map, const char *key,
	    const struct cfg_node **out, char *err, size_t errlen);

/*
 * Fail with a positioned message on the first key of map that no getter
 * asked for; `known` lists the valid keys for the message.
 */
int cfg_check_unknown(const struct cfg *c, const struct cfg_node *map, const char *known,
		      char *err, size_t errlen);

/* Format "file:line:col: " + message into err for node n. Returns -EINVAL. */
int cfg_error(const struct cfg *c, const struct cfg_node *n, char *err, size_t errlen,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
