/*
 * url.c - what the alerter decides about a receiver's URL (alerter.h):
 * whether it is loopback, its host and port, the same URL with another
 * host.  Every answer comes from libcurl's own URL parser, the one that
 * will make the request.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "alerter/alerter.h"

/*
 * The host is taken by libcurl's own URL parser, the one that will make the
 * request: "http://127.0.0.1@example.com/" names example.com (127.0.0.1 is
 * a user name), and "http://127.0.0.1.example.com/" is not loopback either.
 */
int url_is_loopback(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL;
	struct in_addr a4;
	int yes = 0;

	if (!u)
		return 0;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host) {
		if (!strcasecmp(host, "localhost") || !strcmp(host, "[::1]"))
			yes = 1;
		else if (inet_pton(AF_INET, host, &a4) == 1)
			yes = (ntohl(a4.s_addr) >> 24) == 127;
	}
	curl_free(host);
	curl_url_cleanup(u);
	return yes;
}

int url_host_port(const char *url, char *host, size_t hostlen)
{
	CURLU *u = curl_url();
	char *h = NULL, *p = NULL;
	int port = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    strlen(h) < hostlen) {
		snprintf(host, hostlen, "%s", h);
		port = atoi(p);
	}
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return port;
}

int url_with_host(const char *url, const char *host, char *out, size_t outlen)
{
	CURLU *u = curl_url();
	char *s = NULL;
	int ret = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK && strlen(s) < outlen) {
		snprintf(out, outlen, "%s", s);
		ret = 0;
	}
	curl_free(s);
	curl_url_cleanup(u);
	return ret;
}
