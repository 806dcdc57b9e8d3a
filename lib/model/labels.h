/*
 * labels.h - label sets as every part of
 * faultline compares and prints them: the one comparer, the one equality,
 * the one renderer.
 *
 * A label set is an array of {key, value} pairs, sorted by key wherever it
 * is stored or compared (snapshots, alert events, evaluation results).
 */
#ifndef FL_MODEL_LABELS_H
#define FL_MODEL_LABELS_H

struct strbuf;

/* One label; its strings are owned by whatever holds the set. */
struct label {
	char *key;
	char *value;
};

/* qsort(3) comparison of two struct label by key. */
int label_key_cmp(const void *a, const void *b);

/* Whether two label sets (sorted by key) are the same, key for key and value for value. */
int labels_equal(const struct label *a, int na, const struct label *b, int nb);

/*
 * Append {k1="v1",k2="v2"} to out, the values escaped as the Prometheus
 * text format escapes them (\\, \", \n): what faultline prints for a label
 * set in an error or a test report.
 */
void labels_format(struct strbuf *out, const struct label *l, int n);

#endif
