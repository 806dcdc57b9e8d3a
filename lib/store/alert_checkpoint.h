/*
 * alert_checkpoint.h - what the rules engine writes for the alerter: alert
 * events on fl:alerts and, in the same MULTI/EXEC, its alert checkpoint
 * ({fl:alerts}:rules: fingerprint -> alert state JSON), so a restarted
 * engine resumes each alert where the alerter last heard of it.
 */
#ifndef FL_STORE_ALERT_CHECKPOINT_H
#define FL_STORE_ALERT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/*
 * Append events (JSON, lib/model/alert.h) to fl:alerts and, when nstates >= 0,
 * replace the rules' alert checkpoint ({fl:alerts}:rules) with fps[i] -> states[i], in
 * one MULTI/EXEC.  refused[i] (nevents of them) says whether Redis refused
 * event i (a wrong-type fl:alerts, OOM): such events stay with the caller
 * to be sent again, never dropped; err then names the first refusal.
 * Returns how many events Redis took, or -EIO when the exchange failed
 * (nothing written; err says why).
 */
int store_alerts_commit(struct conn *c, char *const *events, int nevents,
			const char *const *fps, const char *const *states, int nstates,
			char *refused, char *err, size_t errlen);

/*
 * Call cb(fp, json, arg) for every entry of the rules' alert checkpoint.
 * Returns the number of entries, or -EIO (err says why).
 */
int store_alerts_state_read(struct conn *c, void (*cb)(const char *fp, const char *json,
							void *arg),
			    void *arg, char *err, size_t errlen);

/*
 * Wait up to timeout_ms until n replicas of the node holding fl:alerts have
 * every write this connection made (WAIT).  Returns how many have (>= 0),
 * or -EIO (err says why).
 */
int store_alerts_wait(struct conn *c, int n, uint64_t timeout_ms, char *err, size_t errlen);

#endif
