/*
 * flamegraph.c - SVG flame graphs; see flamegraph.h.
 *
 * The profile's rows become a tree of frames (children keyed by name);
 * layout is a depth-first walk that places children left to right in name
 * order, so the same profile always draws the same picture.
 */
#include "model/flamegraph.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/strmap.h"

#define FG_WIDTH 1200.0
#define FG_FRAME_H 16
#define FG_PAD_TOP 60
#define FG_MIN_PX 0.2

struct fnode {
	const char *name;
	uint64_t count;
	double base_share;	/* differential: share of this path in base */
	struct fnode *child, *next;
};

static struct fnode *child_of(struct fnode *n, const char *name)
{
	struct fnode **pp = &n->child, *c;

	/* keep children sorted by name for a stable picture */
	while (*pp && strcmp((*pp)->name, name) < 0)
		pp = &(*pp)->next;
	if (*pp && !strcmp((*pp)->name, name))
		return *pp;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = name;
	c->next = *pp;
	*pp = c;
	return c;
}

static int build(struct fnode *root, const struct profile *p, int diff_base)
{
	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct profile_row *row = &p->rows[r];
		const uint32_t *st = p->stacks[row->stack];
		struct fnode *n = root;
		double share = p->total ? (double)row->count / (double)p->total : 0;
		const char *comm = p->strings[row->comm][0] ? p->strings[row->comm] : "[unknown]";

		for (uint32_t i = 0; i <= st[0]; i++) {
			const char *name = i == 0 ? comm : p->strings[st[i]];

			n = child_of(n, name);
			if (!n)
				return -ENOMEM;
			if (diff_base)
				n->base_share += share;
			else
				n->count += row->count;
		}
		if (!diff_base)
			root->count += row->count;
	}
	return 0;
}

/* Add base shares onto the target tree, by path. */
static void overlay(struct fnode *t, struct fnode *b)
{
	for (struct fnode *bc = b->child; bc; bc = bc->next)
		for (struct fnode *tc = t->child; tc; tc = tc->next)
			if (!strcmp(tc->name, bc->name)) {
				tc->base_share = bc->base_share;
				overlay(tc, bc);
			}
}

static void free_tree(struct fnode *n)
{
	while (n) {
		struct fnode *next = n->next;

		free_tree(n->child);
		free(n);
		n = next;
	}
}

static int depth_of(const struct fnode *n)
{
	int d = 0;

	for (const struct fnode *c = n->child; c; c = c->next) {
		int cd = depth_of(c);

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

static void color(const struct fnode *n, uint64_t total, int diff, char *buf, size_t len)
{
	if (diff) {
		double share = total ? (double)n->count / (double)total : 0;
		double d = share - n->base_share;	/* -1..1 */
		int v = (int)(255 - fmin(fabs(d) * 5, 1.0) * 200);

		if (d > 0)
			snprintf(buf, len, "rgb(255,%d,%d)", v, v);
		else
			snprintf(buf, len, "rgb(%d,%d,255)", v, v);
		return;
	}
	/* warm palette, hashed on the name so a function keeps its colour */
	uint32_t h = 2166136261u;

	for (const char *s = n->name; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	if (strstr(n->name, "_[k]"))
		snprintf(buf, len, "rgb(%u,%u,%u)", 200 + h % 55, 120 + (h >> 8) % 60, 50);
	else
		snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 120, (h >> 16) % 55);
}

static void draw(FILE *out, const struct fnode *n, double x, int depth, int height,
		 uint64_t total, int diff)
{
	double w = total ? (double)n->count / (double)total * FG_WIDTH : 0;
	double y = height - (depth + 1) * FG_FRAME_H;
	double share = total ? 100.0 * (double)n->count / (double)total : 0;
	char fill[32];

	if (w < FG_MIN_PX)
		return;
	if (depth >= 0) {
		color(n, total, diff, fill, sizeof(fill));
		fputs("<g class=\"f\"><title>", out);
		fputs_xml(n->name, out);
		fprintf(out, " (%llu samples, %.2f%%", (unsigned long long)n->count, share);
		if (diff)
			fprintf(out, ", was %.2f%%", 100.0 * n->base_share);
		fprintf(out, ")</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" "
			"fill=\"%s\" rx=\"2\"/>", x, y, w, FG_FRAME_H - 1, fill);
		if (w > 30) {
			size_t chars = (size_t)((w - 6) / 7);
			char label[256];

			snprintf(label, sizeof(label), "%s", n->name);
			if (strlen(label) > chars && chars >= 3) {
				label[chars - 2] = '.';
				label[chars - 1] = '.';
				label[chars] = '\0';
			} else if (strlen(label) > chars) {
				label[0] = '\0';
			}
			fprintf(out, "<text x=\"%.1f\" y=\"%.0f\">", x + 3, y + FG_FRAME_H - 4);
			fputs_xml(label, out);
			fputs("</text>", out);
		}
		fputs("</g>\n", out);
	}
	for (const struct fnode *c = n->child; c; c = c->next) {
		draw(out, c, x, depth + 1, height, total, diff);
		x += total ? (double)c->count / (double)total * FG_WIDTH : 0;
	}
}

static const char script[] =
"<script><![CDATA[\n"
"function search(){var re=prompt('Search frames (regular expression):');if(re===null)return;\n"
" var r;try{r=new RegExp(re);}catch(e){alert(e);return;}\n"
" var gs=document.getElementsByClassName('f'),m=0;\n"
" for(var i=0;i<gs.length;i++){var t=gs[i].getElementsByTagName('title')[0].textContent;\n"
"  var rect=gs[i].getElementsByTagName('rect')[0];\n"
"  if(!rect.dataset.fill)rect.dataset.fill=rect.getAttribute('fill');\n"
"  if(re!==''&&r.test(t.replace(/ \\(.*$/,''))){rect.setAttribute('fill','rgb(230,0,230)');m++;}\n"
"  else rect.setAttribute('fill',rect.dataset.fill);}\n"
" document.getElementById('matched').textContent=re===''?'':m+' frames match '+re;}\n"
"document.addEventListener('click',function(e){var g=e.target.parentNode;\n"
" if(g&&g.getAttribute&&g.getAttribute('class')==='f')\n"
"  document.getElementById('details').textContent=g.getElementsByTagName('title')[0].textContent;});\n"
"]]></script>\n";

int flamegraph_write(FILE *out, const struct profile *p, const struct profile *base,
		     const char *title)
{
	struct fnode root = { .name = "all" }, broot = { .name = "all" };
	int depth, height, ret;

	ret = build(&root, p, 0);
	if (!ret && base)
		ret = build(&broot, base, 1);
	if (ret) {
		free_tree(root.child);
		free_tree(broot.child);
		return ret;
	}
	if (base)
		overlay(&root, &broot);
	depth = depth_of(&root);
	height = FG_PAD_TOP + depth * FG_FRAME_H + 40;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font:12px monospace;fill:#000;pointer-events:none}"
		".f:hover rect{stroke:#000;stroke-width:0.5}#search{cursor:pointer}</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n",
		FG_WIDTH, height, FG_WIDTH, height);
	fputs(script, out);
	fprintf(out, "<text x=\"600\" y=\"22\" text-anchor=\"middle\" style=\"font-size:16px\">");
	fputs_xml(title ? title : "faultline CPU profile", out);
	fprintf(out, "</text>\n<text x=\"10\" y=\"44\">%llu samples%s</text>\n"
		"<text id=\"search\" x=\"1120\" y=\"44\" onclick=\"search()\">Search</text>\n"
		"<text id=\"matched\" x=\"900\" y=\"44\" text-anchor=\"end\"></text>\n",
		(unsigned long long)root.count,
		base ? " (red: share grew since the base, blue: shrank)" : "");
	draw(out, &root, 0, -1, height - 30, root.count, base != NULL);
	fprintf(out, "<text id=\"details\" x=\"10\" y=\"%d\"></text>\n</svg>\n", height - 10);
	free_tree(root.child);
	free_tree(broot.child);
	return 0;
}
