/*
 * template_control.c - annotation templates' control structures and the
 * public entry points (rules_template_check, rules_template); see rules.h
 * and template_internal.h.
 */
#include "rules/lang/rules.h"
#include "rules/lang/template_internal.h"
#include "model/labels.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Control structures: {{ if COND }} ... [{{ else if COND }} ...]
 * [{{ else }} ...] {{ end }} and {{ range $k, $v := $labels }} ... {{ end }}
 * (or {{ range $labels }}, "." the value), over the alert's labels in key
 * order as Go ranges over a map.  COND is an argument (true if a non-empty
 * string or a non-zero number), a comparison "gt A B" (lt ge le eq ne),
 * "not C", "and C D" or "or C D", with parentheses around inner ones;
 * arguments are $value, $labels.NAME, a range variable, a number or a
 * quoted string.  Numbers compare as numbers, anything else as strings.
 * A template is parsed into a tree of these (struct tnode) at check and
 * at render.
 */
enum tnode_kind { TN_TEXT, TN_PRINT, TN_IF, TN_RANGE };
enum texpr_op { TX_ARG, TX_NUM, TX_STR, TX_NOT, TX_AND, TX_OR, TX_GT, TX_LT, TX_GE, TX_LE,
		TX_EQ, TX_NE };

struct texpr {
	enum texpr_op op;
	struct tmpl_action arg;		/* TX_ARG */
	double num;			/* TX_NUM */
	char str[128];			/* TX_STR */
	struct texpr *a, *b;
};

struct tnode {
	enum tnode_kind kind;
	const char *s, *e;		/* TN_TEXT: the text; TN_PRINT: the action */
	struct texpr *cond;		/* TN_IF */
	char kvar[32], vvar[32];	/* TN_RANGE: "$k", "$v" (vvar "." for a bare range) */
	struct tnode *body, *alt;	/* TN_IF: then / else; TN_RANGE: body */
	struct tnode *next;
};

/* A template's pieces: text between actions (trimmed as {{- -}} ask) and actions. */
struct ttok {
	int action;
	const char *s, *e;
};

struct tparse {
	const char *t;
	struct ttok *tok;
	size_t n, at;
	char *why;
	size_t wl, off;
	int failed;
	int depth;
};

static void tfail(struct tparse *ps, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void tfail(struct tparse *ps, const char *where, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return;
	ps->failed = 1;
	ps->off = (size_t)(where - ps->t);
	va_start(ap, fmt);
	vsnprintf(ps->why, ps->wl, fmt, ap);
	va_end(ap);
}

static void texpr_free(struct texpr *x)
{
	if (!x)
		return;
	texpr_free(x->a);
	texpr_free(x->b);
	free(x);
}

static void tnode_free(struct tnode *n)
{
	while (n) {
		struct tnode *next = n->next;

		texpr_free(n->cond);
		tnode_free(n->body);
		tnode_free(n->alt);
		free(n);
		n = next;
	}
}

static int tokenize(struct tparse *ps)
{
	const char *open = NULL, *s = NULL, *e = NULL, *p = ps->t, *close = NULL;
	int tl = 0, tr = 0, prev_tr = 0, got;

	ps->tok = calloc(2 * strlen(ps->t) + 2, sizeof(*ps->tok));
	if (!ps->tok)
		return -ENOMEM;
	for (;;) {
		const char *text = p, *end;

		got = tmpl_next(p, &open, &s, &e, &close, &tl, &tr);
		end = got > 0 ? open : p + strlen(p);
		if (prev_tr)
			while (text < end && isspace((unsigned char)*text))
				text++;	/* the previous action's " -}}" */
		prev_tr = tr;
		if (got > 0 && tl)
			while (end > text && isspace((unsigned char)end[-1]))
				end--;
		if (end > text)
			ps->tok[ps->n++] = (struct ttok){ .action = 0, .s = text, .e = end };
		if (got < 0) {
			tfail(ps, open, "'{{' without its '}}'");
			return -EINVAL;
		}
		if (!got)
			return 0;
		ps->tok[ps->n++] = (struct ttok){ .action = 1, .s = s, .e = e };
		p = close;
	}
}

/* The first word of action [s, e) into w; returns past it. */
static const char *first_word(const char *s, const char *e, char *w, size_t wl)
{
	return tmpl_word(tmpl_skip_spaces(s, e), e, w, wl);
}

static struct texpr *parse_cond(struct tparse *ps, const char **p, const char *e);


static struct texpr *parse_term(struct tparse *ps, const char **p, const char *e)
{
	struct texpr *x;
	char w[160], *end;
	const char *at;

	*p = tmpl_skip_spaces(*p, e);
	at = *p;
	if (++ps->depth > 16) {
		tfail(ps, at, "condition nested too deeply");
		return NULL;
	}
	if (*p < e && **p == '(') {
		(*p)++;
		x = parse_cond(ps, p, e);
		*p = tmpl_skip_spaces(*p, e);
		if (*p < e && **p == ')')
			(*p)++;
		else
			tfail(ps, *p, "expected ')'");
		ps->depth--;
		return x;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		tfail(ps, at, "out of memory");
		return NULL;
	}
	*p = tmpl_word(*p, e, w, sizeof(w));
	if (*p > at && (*p)[-1] != '"')
		while (*p > at && ((*p)[-1] == ')'))
			(*p)--;	/* a word ends before the ')' that closes its group */
	w[*p - at < (ptrdiff_t)sizeof(w) ? *p - at : (ptrdiff_t)sizeof(w) - 1] = '\0';
	if (w[0] == '"' && strlen(w) >= 2 && w[strlen(w) - 1] == '"') {
		x->op = TX_STR;
		snprintf(x->str, sizeof(x->str), "%.*s", (int)strlen(w) - 2, w + 1);
	} else if (w[0] && (x->num = strtod(w, &end), end != w && !*end)) {
		x->op = TX_NUM;
	} else if (!tmpl_arg_of(w, &x->arg)) {
		x->op = TX_ARG;
	} else {
		tfail(ps, at, "'%s' is not a value a condition can use ($value, $labels.NAME, a "
		      "range variable, a number or a quoted string)", w);
	}
	ps->depth--;
	return x;
}

static struct texpr *parse_cond(struct tparse *ps, const char **p, const char *e)
{
	static const struct {
		const char *name;
		enum texpr_op op;
		int args;
	} fns[] = { { "not", TX_NOT, 1 }, { "and", TX_AND, 2 }, { "or", TX_OR, 2 },
		    { "gt", TX_GT, 2 }, { "lt", TX_LT, 2 }, { "ge", TX_GE, 2 },
		    { "le", TX_LE, 2 }, { "eq", TX_EQ, 2 }, { "ne", TX_NE, 2 } };
	char w[160];
	const char *q = tmpl_skip_spaces(*p, e);

	tmpl_word(q, e, w, sizeof(w));
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(w, fns[i].name)) {
			struct texpr *x = calloc(1, sizeof(*x));

			if (!x) {
				tfail(ps, q, "out of memory");
				return NULL;
			}
			x->op = fns[i].op;
			*p = q + strlen(w);
			x->a = parse_term(ps, p, e);
			if (fns[i].args == 2 && !ps->failed)
				x->b = parse_term(ps, p, e);
			return x;
		}
	if (tmpl_fn_of(w) || (w[0] && isalpha((unsigned char)w[0]) && !strchr(w, '"'))) {
		tfail(ps, q, "'%s' is not a condition: use an argument, not, and, or, gt, lt, ge, "
		      "le, eq or ne", w);
		return NULL;
	}
	return parse_term(ps, p, e);
}

static struct tnode *parse_list(struct tparse *ps, const char **stop, int in_range,
				const char *vars);

/* Whether name is one of the space-separated names in vars. */
static int in_scope(const char *vars, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = vars ? vars : ""; (p = strstr(p, name)); p += n)
		if ((p == vars || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/* The node for action token ps->tok[ps->at] (consumed), which is not else/end. */
static struct tnode *parse_action(struct tparse *ps, int in_range, const char *vars)
{
	const struct ttok *t = &ps->tok[ps->at++];
	struct tnode *n = calloc(1, sizeof(*n));
	const char *p, *stop = NULL, *word;
	char w[160];

	if (!n) {
		tfail(ps, t->s, "out of memory");
		return NULL;
	}
	p = first_word(t->s, t->e, w, sizeof(w));
	word = tmpl_skip_spaces(t->s, t->e);
	if (!strcmp(w, "if")) {
		n->kind = TN_IF;
		n->cond = parse_cond(ps, &p, t->e);
		p = tmpl_skip_spaces(p, t->e);
		if (!ps->failed && p < t->e)
			tfail(ps, p, "unexpected '%.*s' after the condition", (int)(t->e - p), p);
		if (ps->failed)
			return n;
		n->body = parse_list(ps, &stop, in_range, vars);
		if (ps->failed)
			return n;
		if (!stop) {
			tfail(ps, word, "'if' without its {{ end }}");
			return n;
		}
		if (!strcmp(stop, "else if")) {
			/* else if C: an if of its own in the else branch, sharing our end */
			n->alt = parse_action(ps, in_range, vars);
		} else if (!strcmp(stop, "else")) {
			n->alt = parse_list(ps, &stop, in_range, vars);
			if (!ps->failed && (!stop || strcmp(stop, "end")))
				tfail(ps, word, "'if' without its {{ end }}");
		}
		return n;
	}
	if (!strcmp(w, "range")) {
		char a[160], b[160], c[160], d[160];
		const char *q = tmpl_word(tmpl_skip_spaces(p, t->e), t->e, a, sizeof(a));

		n->kind = TN_RANGE;
		if (!strcmp(a, "$labels") || !strcmp(a, ".Labels")) {
			snprintf(n->vvar, sizeof(n->vvar), ".");
		} else {
			/* range $k, $v := $labels */
			size_t al = strlen(a);

			q = tmpl_word(tmpl_skip_spaces(q, t->e), t->e, b, sizeof(b));
			q = tmpl_word(tmpl_skip_spaces(q, t->e), t->e, c, sizeof(c));
			q = tmpl_word(tmpl_skip_spaces(q, t->e), t->e, d, sizeof(d));
			if (al < 3 || a[0] != '$' || a[al - 1] != ',' || b[0] != '$' ||
			    strcmp(c, ":=") || (strcmp(d, "$labels") && strcmp(d, ".Labels"))) {
				tfail(ps, word, "range goes over $labels: {{ range $k, $v := $labels }} "
				      "or {{ range $labels }}");
				return n;
			}
			snprintf(n->kvar, sizeof(n->kvar), "%.*s", (int)(al - 1 < 31 ? al - 1 : 31), a);
			snprintf(n->vvar, sizeof(n->vvar), "%.31s", b);
		}
		q = tmpl_skip_spaces(q, t->e);
		if (q < t->e) {
			tfail(ps, q, "unexpected '%.*s' in range", (int)(t->e - q), q);
			return n;
		}
		{
			char scope[96];

			snprintf(scope, sizeof(scope), "%s %s %s", vars ? vars : "", n->kvar, n->vvar);
			n->body = parse_list(ps, &stop, 1, scope);
		}
		if (!ps->failed && (!stop || strcmp(stop, "end")))
			tfail(ps, word, "'range' without its {{ end }}");
		return n;
	}
	if (!strcmp(w, "with") || !strcmp(w, "define") || !strcmp(w, "template") ||
	    !strcmp(w, "block") || !strcmp(w, "break") || !strcmp(w, "continue")) {
		tfail(ps, tmpl_skip_spaces(t->s, t->e), "'%s' is not supported in templates (if, else, "
		      "range over $labels and end are)", w);
		return n;
	}
	{
		struct tmpl_action act;
		size_t at;

		n->kind = TN_PRINT;
		n->s = t->s;
		n->e = t->e;
		if (tmpl_parse_action(t->s, t->e, &act, ps->why, ps->wl, &at)) {
			ps->failed = 1;
			ps->off = (size_t)(t->s - ps->t) + at;
		} else if (act.arg == ARG_VAR && (!in_range || !in_scope(vars, act.label))) {
			/* a variable only where a range made it */
			tfail(ps, tmpl_skip_spaces(t->s, t->e), "'%s' is not defined here (range over "
			      "$labels defines its variables)", act.label);
		}
	}
	return n;
}

/*
 * Nodes up to the end of the template or an else/end action; *stop gets
 * that action's text ("else", "else if ...", "end") or NULL at the end.
 */
static struct tnode *parse_list(struct tparse *ps, const char **stop, int in_range,
				const char *vars)
{
	struct tnode *head = NULL, **tail = &head;

	*stop = NULL;
	if (++ps->depth > 16) {
		tfail(ps, ps->at < ps->n ? ps->tok[ps->at].s : ps->t, "templates nested too deeply");
		return NULL;
	}
	while (!ps->failed && ps->at < ps->n) {
		const struct ttok *t = &ps->tok[ps->at];
		struct tnode *n;
		char w[160];

		if (t->action) {
			const char *p = first_word(t->s, t->e, w, sizeof(w));

			if (!strcmp(w, "end") || !strcmp(w, "else")) {
				p = tmpl_skip_spaces(p, t->e);
				if (!strcmp(w, "else") && p < t->e) {
					char w2[16];

					tmpl_word(p, t->e, w2, sizeof(w2));
					if (strcmp(w2, "if"))
						tfail(ps, p, "'else' takes 'if COND' or nothing");
					/* "else if C": the token is re-read as "if C" */
					ps->tok[ps->at].s = p;
					*stop = "else if";
				} else {
					*stop = !strcmp(w, "end") ? "end" : "else";
					if (p < t->e)
						tfail(ps, p, "nothing goes after '%s'", w);
					ps->at++;
				}
				break;
			}
			n = parse_action(ps, in_range, vars);
		} else {
			n = calloc(1, sizeof(*n));
			if (n) {
				n->kind = TN_TEXT;
				n->s = t->s;
				n->e = t->e;
			}
			ps->at++;
		}
		if (!n) {
			tfail(ps, t->s, "out of memory");
			break;
		}
		*tail = n;
		tail = &n->next;
	}
	ps->depth--;
	return head;
}

/* Parse template t.  0 and *out, or -EINVAL with why and *off (byte offset in t). */
static int tmpl_build(const char *t, struct tnode **out, char *why, size_t wl, size_t *off)
{
	struct tparse ps = { .t = t, .why = why, .wl = wl };
	const char *stop = NULL;
	struct tnode *n = NULL;

	*out = NULL;
	if (!tokenize(&ps))
		n = parse_list(&ps, &stop, 0, NULL);
	if (!ps.failed && stop) {
		/* an else or end nothing opened */
		const struct ttok *t = &ps.tok[!strcmp(stop, "else if") ? ps.at : ps.at - 1];

		tfail(&ps, tmpl_skip_spaces(t->s, t->e), "'%s' without an if or range before it",
		      !strcmp(stop, "end") ? "end" : "else");
	}
	free(ps.tok);
	if (ps.failed) {
		tnode_free(n);
		*off = ps.off;
		return -EINVAL;
	}
	*out = n;
	return 0;
}

int rules_template_check(const char *t, char *why, size_t wl, size_t *off)
{
	struct tnode *n;
	int ret = tmpl_build(t, &n, why, wl, off);

	tnode_free(n);
	return ret;
}

/* What a render sees: the alert's value and labels, and a range's current pair. */
struct tenv {
	double value;
	const struct label *labels;
	int nlabels;
	const struct rules_template_ctx *ctx;
	const char *kvar, *vvar;	/* names in scope */
	const char *k, *v;		/* their values */
	const struct tenv *up;		/* an enclosing range's */
};

/* The string an ARG_VAR, ARG_EXTURL or ARG_EXTLABEL argument a stands for ("" if none). */
static const char *tenv_var(const struct tenv *env, const char *name);

static const char *tenv_arg(const struct tenv *env, const struct tmpl_action *a)
{
	const struct rules_template_ctx *c = env->ctx;

	if (a->arg == ARG_EXTURL)
		return c && c->external_url ? c->external_url : "";
	if (a->arg == ARG_EXTLABEL) {
		for (int i = 0; c && i < c->nexternal; i++)
			if (!strcmp(c->external_labels[i].key, a->label))
				return c->external_labels[i].value;
		return "";
	}
	return tenv_var(env, a->label);
}

static const char *tenv_var(const struct tenv *env, const char *name)
{
	for (; env; env = env->up) {
		if (env->kvar && !strcmp(env->kvar, name))
			return env->k;
		if (env->vvar && !strcmp(env->vvar, name))
			return env->v;
	}
	return NULL;
}

/* An argument's value: a string (*s) or, when it reads as one, a number (*x). */
static int texpr_operand(const struct texpr *x, const struct tenv *env, const char **s,
			 double *num)
{
	char *end;

	*s = NULL;
	switch (x->op) {
	case TX_NUM:
		*num = x->num;
		return 1;
	case TX_STR:
		*s = x->str;
		break;
	case TX_ARG:
		if (x->arg.arg == ARG_VALUE) {
			*num = env->value;
			return 1;
		}
		if (x->arg.arg != ARG_LABEL) {
			*s = tenv_arg(env, &x->arg);
		} else {
			for (int i = 0; i < env->nlabels; i++)
				if (!strcmp(env->labels[i].key, x->arg.label))
					*s = env->labels[i].value;
		}
		if (!*s)
			*s = "";
		break;
	default:
		return -1;
	}
	*num = strtod(*s, &end);
	return **s && !*end;
}

static int texpr_true(const struct texpr *x, const struct tenv *env)
{
	const char *sa, *sb;
	double a = 0, b = 0;
	int na, nb, c;

	switch (x->op) {
	case TX_NOT: return !texpr_true(x->a, env);
	case TX_AND: return texpr_true(x->a, env) && texpr_true(x->b, env);
	case TX_OR: return texpr_true(x->a, env) || texpr_true(x->b, env);
	case TX_ARG:
	case TX_NUM:
	case TX_STR:
		na = texpr_operand(x, env, &sa, &a);
		return sa && x->op != TX_ARG ? *sa != 0 : (na == 1 && !sa ? a != 0 : sa && *sa);
	default:
		break;
	}
	na = texpr_operand(x->a, env, &sa, &a);
	nb = texpr_operand(x->b, env, &sb, &b);
	if (na == 1 && nb == 1)
		c = a < b ? -1 : a > b;
	else
		c = strcmp(sa ? sa : "", sb ? sb : "");
	switch (x->op) {
	case TX_GT: return c > 0;
	case TX_LT: return c < 0;
	case TX_GE: return c >= 0;
	case TX_LE: return c <= 0;
	case TX_EQ: return c == 0;
	case TX_NE: return c != 0;
	default: return 0;
	}
}

static void tmpl_exec(const struct tnode *n, const struct tenv *env, char *out, size_t len,
		      size_t *o)
{
	for (; n && *o + 1 < len; n = n->next) {
		switch (n->kind) {
		case TN_TEXT: {
			size_t k = (size_t)(n->e - n->s);

			if (k > len - *o - 1)
				k = len - *o - 1;
			memcpy(out + *o, n->s, k);
			*o += k;
			break;
		}
		case TN_PRINT: {
			struct tmpl_action a;
			char why[200], piece[512];
			size_t at;

			if (!tmpl_parse_action(n->s, n->e, &a, why, sizeof(why), &at)) {
				tmpl_render(&a, env->value, env->labels, env->nlabels,
					    a.arg != ARG_VALUE && a.arg != ARG_LABEL ? tenv_arg(env, &a) :
					    NULL, piece,
					    sizeof(piece));
				*o += (size_t)snprintf(out + *o, len - *o, "%s", piece);
				if (*o >= len)
					*o = len - 1;
			}
			break;
		}
		case TN_IF:
			tmpl_exec(texpr_true(n->cond, env) ? n->body : n->alt, env, out, len, o);
			break;
		case TN_RANGE: {
			struct label *sorted = malloc(((size_t)env->nlabels + 1) * sizeof(*sorted));

			if (!sorted)
				break;
			memcpy(sorted, env->labels, (size_t)env->nlabels * sizeof(*sorted));
			qsort(sorted, (size_t)env->nlabels, sizeof(*sorted), label_key_cmp);
			for (int i = 0; i < env->nlabels; i++) {
				struct tenv in = *env;

				in.kvar = n->kvar[0] ? n->kvar : NULL;
				in.vvar = n->vvar;
				in.k = sorted[i].key;
				in.v = sorted[i].value;
				in.up = env;
				tmpl_exec(n->body, &in, out, len, o);
			}
			free(sorted);
			break;
		}
		}
	}
	out[*o] = '\0';
}

void rules_template(const char *t, double value, const struct label *labels, int nlabels,
		    const struct rules_template_ctx *ctx, char *out, size_t len)
{
	struct tenv env = { .value = value, .labels = labels, .nlabels = nlabels, .ctx = ctx };
	struct tnode *n;
	char why[200];
	size_t off, o = 0;

	if (!len)
		return;
	out[0] = '\0';
	/* a template rules_template_check refused at load renders as nothing */
	if (tmpl_build(t, &n, why, sizeof(why), &off))
		return;
	tmpl_exec(n, &env, out, len, &o);
	tnode_free(n);
}
