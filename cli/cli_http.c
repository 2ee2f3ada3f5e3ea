/*
 * cli_http.c - the CLI's HTTP client for dnnsatd over libcurl (see
 * cli_http.h). Owns the curl handle, its header list and the buffer of the
 * last answer; curl's global state is set up by cli_http_open and torn down
 * by cli_http_close (the CLI opens one client per run).
 */
#include "cli_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ANSWER_MAX ((size_t)1 << 30)   /* larger answers are refused */

/* curl's write callback: appends to the answer's stream (h->out). */
static size_t
on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct cli_http *h = ctx;
	size_t add = size * n;

	if (add > ANSWER_MAX - h->len || fwrite(data, 1, add, h->out) != add)
		return 0;       /* curl fails the transfer */
	h->len += add;
	return add;
}

/* curl's header callback: notes Retry-After (in seconds). */
static size_t
on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct cli_http *h = ctx;
	size_t len = size * n;

	if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
		char text[32];
		size_t k = len - 12 < sizeof text - 1 ? len - 12 : sizeof text - 1;
		memcpy(text, data + 12, k);
		text[k] = '\0';
		h->retry_after = atof(text);
	}
	return len;
}

/* Appends a request header; 0 when out of memory (the list stays whole). */
static int
add_header(struct cli_http *h, const char *line)
{
	struct curl_slist *l = curl_slist_append(h->headers, line);

	if (l == NULL)
		return 0;
	h->headers = l;
	return 1;
}

int
cli_http_open(struct cli_http *h, const char *url, const char *token, struct dn_error *err)
{
	size_t n = strlen(url);
	char *auth = NULL;
	int ok;

	memset(h, 0, sizeof *h);
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return dn_error_set(err, DN_EINVAL, "--server", "\"%s\" is not an http:// or https:// URL", url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return dn_error_set(err, DN_EINTERNAL, "--server", "libcurl cannot start");
	h->global = 1;
	h->curl = curl_easy_init();
	h->base = strndup(url, n);
	if (token != NULL && token[0] != '\0') {
		if (asprintf(&auth, "Authorization: Bearer %s", token) < 0)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		h->has_token = 1;
	}
	ok = h->curl != NULL && h->base != NULL && add_header(h, "Accept: application/json") &&
	    add_header(h, "Content-Type: application/json") && (auth == NULL || add_header(h, auth));
	free(auth);
	if (!ok)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "dnnsat-cli/" PACKAGE_VERSION);
	curl_easy_setopt(h->curl, CURLOPT_ACCEPT_ENCODING, "");
	return 0;
}

void
cli_http_close(struct cli_http *h)
{
	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	if (h->global)
		curl_global_cleanup();
	curl_slist_free_all(h->headers);
	free(h->base);
	free(h->body);
	memset(h, 0, sizeof *h);
}

int
cli_http_json(struct cli_http *h, const char *path, const json_t *body, double wait_s, json_t **out,
    struct dn_error *err)
{
	char *url = NULL, *text = NULL;
	long status = 0;
	CURLcode rc;

	*out = NULL;
	if (asprintf(&url, "%s%s", h->base, path) < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17))) == NULL) {
		free(url);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	free(h->body);
	h->body = NULL;
	h->len = 0;
	h->out = open_memstream(&h->body, &h->size);
	if (h->out == NULL) {
		free(text);
		free(url);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	h->retry_after = 0;
	h->errbuf[0] = '\0';
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	if (text != NULL) {
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
	} else
		curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)((wait_s + 30) * 1000));
	rc = curl_easy_perform(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	free(text);
	free(url);
	if (fclose(h->out) != 0 && rc == CURLE_OK)
		rc = CURLE_OUT_OF_MEMORY;
	h->out = NULL;
	if (rc != CURLE_OK)
		return dn_error_set(err, DN_EINTERNAL, "--server", "%s%s: %s", h->base, path,
		    h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (h->len > 0)
		*out = json_loadb(h->body, h->len, 0, NULL);
	if (*out == NULL && status >= 200 && status < 300)
		return dn_error_set(err, DN_EINTERNAL, "--server", "%s%s: answered %ld without a JSON body (is it "
		    "a dnnsatd?)", h->base, path, status);
	return (int)status;
}

int
cli_http_problem(const struct cli_http *h, int status, const json_t *answer, struct dn_error *err)
{
	const char *detail = json_string_value(json_object_get(answer, "detail"));
	const char *title = json_string_value(json_object_get(answer, "title"));

	if (status == 401)
		return dn_error_set(err, DN_EINVAL, "--server", "%s answered 401 %s: %s", h->base, title ? title : "",
		    h->has_token ? "it does not take this token (--token, DNNSAT_TOKEN)" :
		    "it needs a token: give --token T or set DNNSAT_TOKEN");
	return dn_error_set(err, status >= 400 && status < 500 && status != 429 ? DN_EINVAL : DN_EINTERNAL, NULL,
	    "%s (%s answered %d%s%s)", detail ? detail : "no details", h->base, status, title ? " " : "",
	    title ? title : "");
}

char *
cli_http_escape(struct cli_http *h, const char *s)
{
	char *e = curl_easy_escape(h->curl, s, 0);
	char *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
}
