/*
 * cli_units.c - numbers as people read them in the CLI's text answers:
 * bytes in binary units (4.19 GiB), counts with SI suffixes (120.7M),
 * seconds in ms or s, fractions as percentages. JSON answers keep the exact
 * numbers; only text goes through here. The units are those the budgets
 * take (solver/query_parse.c): memory and weight_bytes in bytes, params,
 * macs and flops as counts, latency and step_time in seconds,
 * min_utilization a fraction.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *
cli_human_bytes(double b, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double x = fabs(b);
	int u = -1;

	while (x >= 1024.0 && u < 3) {
		x /= 1024.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%.0f B", b);
	else
		snprintf(buf, len, "%s%.*f %s", b < 0 ? "-" : "", u >= 2 ? 2 : 1, x, units[u]);
	return buf;
}

const char *
cli_human_count(double n, char *buf, size_t len)
{
	static const char *const suffix[] = { "", "K", "M", "G", "T", "P" };
	double x = fabs(n);
	int u = 0;

	while (x >= 1000.0 && u < 5) {
		x /= 1000.0;
		u++;
	}
	snprintf(buf, len, "%s%.4g%s", n < 0 ? "-" : "", x, suffix[u]);
	return buf;
}

const char *
cli_human_seconds(double s, char *buf, size_t len)
{
	if (fabs(s) < 1e-3)
		snprintf(buf, len, "%.4g us", s * 1e6);
	else if (fabs(s) < 1.0)
		snprintf(buf, len, "%.4g ms", s * 1e3);
	else
		snprintf(buf, len, "%.4g s", s);
	return buf;
}

const char *
cli_human_budget(const char *budget, double v, char *buf, size_t len)
{
	if (strcmp(budget, "memory") == 0 || strcmp(budget, "weight_bytes") == 0)
		return cli_human_bytes(v, buf, len);
	if (strcmp(budget, "latency") == 0 || strcmp(budget, "step_time") == 0)
		return cli_human_seconds(v, buf, len);
	if (strcmp(budget, "min_utilization") == 0) {
		snprintf(buf, len, "%.3g%%", v * 100.0);
		return buf;
	}
	return cli_human_count(v, buf, len);
}
