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

/* One frame: a group the script reads (position, depth, samples, name) and draws. */
static void frame(FILE *out, int *id, const char *name, uint64_t count, double base_share,
		  double x, double w, int depth, uint64_t total, const char *fill, int diff)
{
	double y = FG_PAD_TOP + depth * FG_FRAME_H;
	double share = total ? 100.0 * (double)count / (double)total : 0;
	size_t chars = w > 6 ? (size_t)((w - 6) / 7) : 0;
	char label[256];

	fprintf(out, "<g class=\"f\" id=\"f%d\" data-x=\"%.3f\" data-w=\"%.3f\" data-d=\"%d\" "
		"data-s=\"%llu\" data-n=\"", (*id)++, x, w, depth, (unsigned long long)count);
	fputs_xml(name, out);
	fputs("\"><title>", out);
	fputs_xml(name, out);
	fprintf(out, " (%llu samples, %.2f%%", (unsigned long long)count, share);
	if (diff)
		fprintf(out, ", was %.2f%%", 100.0 * base_share);
	fprintf(out, ")</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"%s\" rx=\"2\"/>", x, y, w, FG_FRAME_H - 1, fill);
	snprintf(label, sizeof(label), "%s", name);
	if (strlen(label) > chars && chars >= 3) {
		label[chars - 2] = '.';
		label[chars - 1] = '.';
		label[chars] = '\0';
	} else if (strlen(label) > chars) {
		label[0] = '\0';
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%.0f\">", x + 3, y + FG_FRAME_H - 4);
	fputs_xml(label, out);
	fputs("</text></g>\n", out);
}

/*
 * Frame n at x and its children left to right by name; children narrower
 * than FLAMEGRAPH_MIN_PX are merged into one "[N small frames]" after them.
 */
static void draw(FILE *out, const struct fnode *n, double x, int depth, uint64_t total,
		 int diff, int *id)
{
	double w = total ? (double)n->count / (double)total * FG_WIDTH : 0;
	uint64_t small = 0;
	uint32_t nsmall = 0;
	char fill[32];

	color(n, total, diff, fill, sizeof(fill));
	frame(out, id, n->name, n->count, n->base_share, x, w, depth, total,
	      depth ? fill : "rgb(220,220,220)", diff);
	for (const struct fnode *c = n->child; c; c = c->next) {
		double cw = total ? (double)c->count / (double)total * FG_WIDTH : 0;

		if (cw < FLAMEGRAPH_MIN_PX) {
			small += c->count;
			nsmall++;
			continue;
		}
		draw(out, c, x, depth + 1, total, diff, id);
		x += cw;
	}
	if (nsmall) {
		char name[64];

		snprintf(name, sizeof(name), "[%u small frame%s]", nsmall, nsmall > 1 ? "s" : "");
		frame(out, id, name, small, 0, x, (double)small / (double)total * FG_WIDTH,
		      depth + 1, total, "rgb(190,190,190)", 0);
	}
}

static const char script[] =
"<script><![CDATA[\n"
"var W=1200,zoomed='',query='',TOTAL=0;\n"
"function frames(){return document.querySelectorAll('g.f');}\n"
"function num(e,k){return +e.getAttribute('data-'+k);}\n"
"function fit(g,w){var t=g.querySelector('text'),n=g.getAttribute('data-n'),c=Math.floor((w-6)/7);\n"
" if(t)t.textContent=n.length<=c?n:(c>=3?n.substring(0,c-2)+'..':'');}\n"
"function place(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
" r.setAttribute('x',x.toFixed(1));r.setAttribute('width',w.toFixed(1));\n"
" if(t)t.setAttribute('x',(x+3).toFixed(1));fit(g,w);}\n"
"function save(){var h=[];if(query)h.push('q='+encodeURIComponent(query));\n"
" if(zoomed)h.push('z='+zoomed);\n"
" try{history.replaceState(null,'',h.length?'#'+h.join('&'):location.pathname);}catch(e){}}\n"
"/* zoom into g: it fills the width, its descendants scale, its ancestors stay above */\n"
"function zoom(g){var fx=num(g,'x'),fw=num(g,'w'),fd=num(g,'d'),k=W/fw,e=1e-6;\n"
" frames().forEach(function(f){var x=num(f,'x'),w=num(f,'w'),d=num(f,'d');\n"
"  if(d>=fd&&x>=fx-e&&x+w<=fx+fw+e){f.style.display='';f.style.opacity='';place(f,(x-fx)*k,w*k);}\n"
"  else if(d<fd&&x<=fx+e&&x+w>=fx+fw-e){f.style.display='';f.style.opacity='0.6';place(f,0,W);}\n"
"  else f.style.display='none';});\n"
" zoomed=num(g,'d')>0?g.id:'';\n"
" document.getElementById('unzoom').style.display=zoomed?'':'none';save();}\n"
"function unzoom(){zoom(document.getElementById('f0'));}\n"
"/* highlight frames matching re; the share of all samples they cover, nested ones once */\n"
"function search(re){if(re===undefined){re=prompt('Search frames (regular expression):',query);\n"
"  if(re===null)return;}\n"
" var r;try{r=new RegExp(re);}catch(x){alert(x);return;}\n"
" var m=[];frames().forEach(function(f){var rc=f.querySelector('rect');\n"
"  if(!rc.hasAttribute('data-fill'))rc.setAttribute('data-fill',rc.getAttribute('fill'));\n"
"  if(re!==''&&r.test(f.getAttribute('data-n'))){rc.setAttribute('fill','rgb(230,0,230)');m.push(f);}\n"
"  else rc.setAttribute('fill',rc.getAttribute('data-fill'));});\n"
" m.sort(function(a,b){return num(a,'x')-num(b,'x')||num(a,'d')-num(b,'d');});\n"
" var end=-1,s=0;m.forEach(function(f){var x=num(f,'x');\n"
"  if(x>=end-1e-9){s+=num(f,'s');end=x+num(f,'w');}});\n"
" query=re;document.getElementById('matched').textContent=re===''?'':\n"
"  'Matched: '+(TOTAL?100*s/TOTAL:0).toFixed(1)+'% of samples ('+m.length+' frames)';save();}\n"
"document.addEventListener('click',function(ev){var g=ev.target.parentNode;\n"
" if(!g||!g.getAttribute||g.getAttribute('class')!=='f')return;\n"
" document.getElementById('details').textContent=g.querySelector('title').textContent;\n"
" if(g.id==='f0'||g.id===zoomed)unzoom();else zoom(g);});\n"
"window.addEventListener('load',function(){TOTAL=num(document.getElementById('f0'),'s');\n"
" location.hash.replace(/^#/,'').split('&').forEach(function(kv){var i=kv.indexOf('=');\n"
"  if(i<0)return;var k=kv.substring(0,i),v=decodeURIComponent(kv.substring(i+1));\n"
"  if(k==='z'&&document.getElementById(v))zoom(document.getElementById(v));\n"
"  if(k==='q')search(v);});});\n"
"]]></script>\n";

int flamegraph_write(FILE *out, const struct profile *p, const struct profile *base,
		     const char *title)
{
	struct fnode root = { .name = "all" }, broot = { .name = "all" };
	int depth, height, ret, id = 0;

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
	depth = depth_of(&root);	/* levels below "all", plus one for it */
	height = FG_PAD_TOP + depth * FG_FRAME_H + 30;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font:12px monospace;fill:#000;pointer-events:none}"
		".f{cursor:pointer}.f:hover rect{stroke:#000;stroke-width:0.5}"
		"#search,#unzoom{cursor:pointer;fill:#005}</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n",
		FG_WIDTH, height, FG_WIDTH, height);
	fputs(script, out);
	fprintf(out, "<text x=\"600\" y=\"22\" text-anchor=\"middle\" style=\"font-size:16px\">");
	fputs_xml(title ? title : "faultline CPU profile", out);
	fprintf(out, "</text>\n<text x=\"10\" y=\"44\">%llu samples%s; click a frame to zoom"
		"</text>\n"
		"<text id=\"unzoom\" x=\"10\" y=\"22\" style=\"display:none\" "
		"onclick=\"unzoom()\">Reset zoom</text>\n"
		"<text id=\"search\" x=\"1140\" y=\"44\" onclick=\"search()\">Search</text>\n"
		"<text id=\"matched\" x=\"1120\" y=\"44\" text-anchor=\"end\"></text>\n",
		(unsigned long long)root.count,
		base ? " (red: share grew since the base, blue: shrank)" : "");
	draw(out, &root, 0, 0, root.count, base != NULL, &id);
	fprintf(out, "<text id=\"details\" x=\"10\" y=\"%d\"></text>\n</svg>\n", height - 10);
	free_tree(root.child);
	free_tree(broot.child);
	return 0;
}
