/*
 * receiver.h - the alerter config's `receivers:` and `global:`.
 *
 * A receiver comes in either of two shapes, and both may be mixed in one
 * file:
 *   - faultline's: name, url, format (alertmanager, alertmanager_api,
 *     slack, pagerduty), secret, headers, ...: one integration;
 *   - Alertmanager's: name and lists of webhook_configs, slack_configs,
 *     pagerduty_configs (read as Alertmanager reads them, each with its
 *     http_config) and faultline_configs (faultline's fields, no name):
 *     one integration per item, named "RECEIVER/KIND[i]"; a receiver with
 *     none drops what reaches it, as in Alertmanager.
 * What Alertmanager defines and faultline does not do (email, templates,
 * proxies, ...) is refused at file:line:col.
 */
#ifndef FL_ALERTER_RECEIVER_H
#define FL_ALERTER_RECEIVER_H

#include <stddef.h>

#include "core/config.h"

/* CFG_CUSTOM parsers (core/config_schema.h) into a struct alerter_config. */
int receivers_parse(const struct cfg *c, const struct cfg_node *map, const char *key, void *base,
		    char *err, size_t errlen);
int global_parse(const struct cfg *c, const struct cfg_node *map, const char *key, void *base,
		 char *err, size_t errlen);

/* A string key into dst (len bytes): absent leaves dst, too long is an error. */
int cfg_copy_str(const struct cfg *c, const struct cfg_node *map, const char *key, char *dst,
		 size_t len, char *err, size_t errlen);

#endif
