// SPDX-License-Identifier: MIT
/*
 * This file implements the pieces of a daemon's stats that more than one
 * verb prints: the staging line with its progress bar and durations.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "mountctl.h"
#include "util/size.h"

#define BAR_WIDTH 12 /* characters between the brackets */

const char *mc_fmt_duration(double s, char *buf, size_t cap)
{
	unsigned long long t = (unsigned long long)(s < 0 ? 0 : s);

	if (s < 60)
		snprintf(buf, cap, "%.1fs", s < 0 ? 0 : s);
	else if (t < 3600)
		snprintf(buf, cap, "%llum %02llus", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, cap, "%lluh %02llum", t / 3600, t / 60 % 60);
	else
		snprintf(buf, cap, "%llud %02lluh", t / 86400, t / 3600 % 24);
	return buf;
}

/* "1.2/1.9 GiB": both sizes in the unit of the larger. */
static void fmt_pair(uint64_t a, uint64_t b, char *buf, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double div = 1;
	unsigned int i = 0;

	while ((double)MAX(a, b) / div >= 1024 && i + 1 < ARRAY_SIZE(unit)) {
		div *= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, cap, "%llu/%llu B", (unsigned long long)a,
			 (unsigned long long)b);
	else
		snprintf(buf, cap, "%.1f/%.1f %s", (double)a / div,
			 (double)b / div, unit[i]);
}

static void fmt_rate(double mb_per_s, char *buf, size_t cap)
{
	snprintf(buf, cap, mb_per_s < 10 ? "%.1f MB/s" : "%.0f MB/s", mb_per_s);
}

bool mc_is_staged(const struct ctl_stats *stats)
{
	const char *state = stats->stage_state;

	if (!*state)
		return stats->stage_on_tmpfs;
	/* Staging asked for (mountctl stage) runs even from tmpfs. */
	return !strcmp(state, "done") || !strcmp(state, "off");
}

const char *mc_stage_line(const struct ctl_stats *stats, char *buf, size_t cap)
{
	uint64_t planned = stats->stage_planned;
	uint64_t staged = stats->stage_staged;
	uint64_t image = stats->image_bytes;
	double pct = stats->stage_percent;
	double rate = stats->stage_mb_per_s;
	double secs = stats->stage_seconds;
	const char *state = *stats->stage_state ? stats->stage_state :
						  "unknown";
	char bar[BAR_WIDTH + 1], pair[48], speed[32], t[32];
	char tail[96] = "";
	int fill;

	if (!strcmp(state, "off")) {
		snprintf(buf, cap, "%s",
			 stats->stage_on_tmpfs ?
				 "image already in RAM (tmpfs): not staged" :
				 "staging off");
		return buf;
	}
	if (!(pct >= 0))
		pct = 0;
	if (pct > 100)
		pct = 100;
	fill = (int)lround(pct * BAR_WIDTH / 100);
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = '\0';
	fmt_pair(staged, planned, pair, sizeof(pair));
	fmt_rate(rate, speed, sizeof(speed));
	if (planned < image && image) {
		double part = 100.0 * (double)planned / (double)image;
		char img[32];

		snprintf(tail, sizeof(tail), " (%s%.0f%% of the %s image)",
			 part < 1 ? "<" : "", part < 1 ? 1 : part,
			 size_format(image, img, sizeof(img)));
	}
	if (!strcmp(state, "done"))
		snprintf(buf, cap, "[%s] %3.0f%% %s done in %s, %s%s", bar, pct,
			 pair, mc_fmt_duration(secs, t, sizeof(t)), speed,
			 tail);
	else if (!strcmp(state, "idle"))
		snprintf(buf, cap, "[%s] %3.0f%% %s not started yet%s", bar,
			 pct, pair, tail);
	else if (rate > 0 && planned > staged)
		snprintf(
			buf, cap, "[%s] %3.0f%% %s %s, ETA %s%s", bar, pct,
			pair, speed,
			mc_fmt_duration((double)(planned - staged) / 1e6 / rate,
					t, sizeof(t)),
			tail);
	else
		snprintf(buf, cap, "[%s] %3.0f%% %s %s%s", bar, pct, pair,
			 speed, tail);
	return buf;
}
