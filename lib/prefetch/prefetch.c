// SPDX-License-Identifier: MIT
/*
 * This file implements the prefetcher declared in prefetch.h: the stager
 * thread and the readahead worker pool with its bounded job queue.
 */
#define LOG_MOD "prefetch"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prefetch/prefetch.h"
#include "util/clock.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/size.h"

#define PF_MAX_WORKERS 64
#define PF_MAX_STAGERS 16
/*
 * Stager threads, each with at most one read under way; how many of them
 * read at once is the image's to say (img_stage_next() paces them by how
 * long their reads take), so there are as many as it may ever want.
 */
#define PF_STAGERS 16
#define PF_WATCH_MS 1000 /* how often the stager looks at the image file */

struct pf_job {
	struct pf_job *next; /* queue link; protected by pf->lock */
	struct img_inode ino; /* the file */
	uint32_t first; /* first block */
	uint32_t count; /* blocks */
};

struct pf {
	struct img *img; /* the image; not owned */
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t work; /* a job arrived or stopping */
	pthread_cond_t resume; /* staging resumed or stopping (stagers) */
	pthread_cond_t staged; /* staging finished or stopping */
	struct pf_job *head, *tail; /* the queue */
	unsigned int queued_now; /* jobs in the queue */
	unsigned int queue_max; /* the most allowed */
	bool stopping; /* pf_free() was called */
	bool stage_done; /* the stager has finished its plan */
	unsigned int resumes; /* pf_stage_resume() calls */
	pthread_t workers[PF_MAX_WORKERS];
	unsigned int nworkers; /* threads started */
	pthread_t stagers[PF_MAX_STAGERS];
	unsigned int nstagers; /* stager threads started */
	unsigned int stager_ids; /* stager threads that ran */
	struct timespec stage_start; /* when staging began */
	double stage_seconds; /* set when staging ends */
	uint64_t queued, done, dropped, errors; /* counters */
};

/* The stager threads; the first one also watches the image file. */
static void *stager_main(void *arg)
{
	struct pf *pf = arg;
	struct timespec last, deadline;
	unsigned int seen = 0; /* pf->resumes when img_stage_next() ran */
	bool done = false, watch;

	pthread_mutex_lock(&pf->lock);
	watch = pf->stager_ids++ == 0; /* the first one to run */
	pthread_mutex_unlock(&pf->lock);
	mono_now(&last);
	for (;;) {
		pthread_mutex_lock(&pf->lock);
		if (pf->stopping) {
			pthread_mutex_unlock(&pf->lock);
			break;
		}
		if (done && pf->resumes != seen)
			done = false; /* staging was resumed */
		if (done) {
			/* Only the first watches the file from now on; the
			 * others sleep until staging resumes or stops. */
			if (watch) {
				deadline_in_ms(&deadline, PF_WATCH_MS);
				pthread_cond_timedwait(&pf->resume, &pf->lock,
						       &deadline);
			} else {
				pthread_cond_wait(&pf->resume, &pf->lock);
			}
			pthread_mutex_unlock(&pf->lock);
			if (watch)
				img_check_changed(pf->img);
			continue;
		}
		seen = pf->resumes;
		pthread_mutex_unlock(&pf->lock);

		if (img_stage_next(pf->img) == 0) {
			bool first;

			pthread_mutex_lock(&pf->lock);
			if (pf->resumes != seen) {
				/* Resumed meanwhile: plan again at once. */
				pthread_mutex_unlock(&pf->lock);
				continue;
			}
			done = true;
			first = !pf->stage_done;
			if (first) {
				pf->stage_done = true;
				pf->stage_seconds =
					mono_since(&pf->stage_start);
				pthread_cond_broadcast(&pf->staged);
			}
			pthread_mutex_unlock(&pf->lock);
			if (first &&
			    img_stage_state(pf->img) == IMG_STAGE_DONE) {
				struct img_stats st;
				char a[32];

				img_get_stats(pf->img, &st);
				log_info("staged %s of '%s' into RAM in %.1f s",
					 size_format(st.staged_bytes, a,
						     sizeof(a)),
					 img_path(pf->img), pf->stage_seconds);
			}
		}
		if (watch && mono_since(&last) * 1000 >= PF_WATCH_MS) {
			img_check_changed(pf->img);
			mono_now(&last);
		}
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct pf *pf = arg;
	struct pf_job *job;
	int err;

	img_read_source(IMG_READ_READAHEAD);
	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->head && !pf->stopping)
			pthread_cond_wait(&pf->work, &pf->lock);
		if (pf->stopping)
			break;
		job = pf->head;
		pf->head = job->next;
		if (!pf->head)
			pf->tail = NULL;
		pf->queued_now--;
		pthread_mutex_unlock(&pf->lock);

		err = img_file_prefetch(pf->img, &job->ino, job->first,
					job->count);
		free(job);

		pthread_mutex_lock(&pf->lock);
		pf->done++;
		if (err)
			pf->errors++;
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int pf_new(struct img *img, const struct pf_opts *opts, struct pf **out)
{
	struct pf_opts def = { 0, 256, true, 0 };
	unsigned int n;
	long cpus;
	struct pf *pf;
	int err;

	if (!opts)
		opts = &def;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->img = img;
	pf->queue_max = opts->queue_max ? opts->queue_max : 256;
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->work, NULL);
	pthread_cond_init(&pf->resume, NULL);
	pthread_cond_init(&pf->staged, NULL);
	mono_now(&pf->stage_start);

	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	n = opts->workers ? opts->workers : (unsigned int)MAX(cpus, 1L);
	n = MIN(n, (unsigned int)PF_MAX_WORKERS);
	for (; pf->nworkers < n; pf->nworkers++) {
		err = -pthread_create(&pf->workers[pf->nworkers], NULL,
				      worker_main, pf);
		if (err)
			goto out_free;
	}
	if (opts->stage) {
		/* Also watch the image file when there is nothing to stage. */
		n = opts->stagers ? opts->stagers : PF_STAGERS;
		n = MIN(n, (unsigned int)PF_MAX_STAGERS);
		while (pf->nstagers < n) {
			pthread_t t;

			err = -pthread_create(&t, NULL, stager_main, pf);
			if (err)
				goto out_free;
			pthread_mutex_lock(&pf->lock);
			pf->stagers[pf->nstagers++] = t;
			pthread_mutex_unlock(&pf->lock);
		}
	} else {
		pf->stage_done = true;
	}
	*out = pf;
	return 0;

out_free:
	pf_free(pf);
	return err;
}

void pf_free(struct pf *pf)
{
	struct pf_job *job;

	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->stopping = true;
	pthread_cond_broadcast(&pf->work);
	pthread_cond_broadcast(&pf->resume);
	pthread_cond_broadcast(&pf->staged);
	pthread_mutex_unlock(&pf->lock);
	for (unsigned int i = 0; i < pf->nworkers; i++)
		pthread_join(pf->workers[i], NULL);
	for (unsigned int i = 0; i < pf->nstagers; i++)
		pthread_join(pf->stagers[i], NULL);
	while ((job = pf->head)) {
		pf->head = job->next;
		free(job);
	}
	pthread_cond_destroy(&pf->staged);
	pthread_cond_destroy(&pf->work);
	pthread_cond_destroy(&pf->resume);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}

int pf_readahead(struct pf *pf, const struct img_inode *ino, uint32_t first,
		 uint32_t count)
{
	struct pf_job *job;

	pthread_mutex_lock(&pf->lock);
	if (pf->queued_now >= pf->queue_max || pf->stopping) {
		pf->dropped++;
		pthread_mutex_unlock(&pf->lock);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&pf->lock);
	job = malloc(sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->next = NULL;
	job->ino = *ino;
	job->first = first;
	job->count = count;
	pthread_mutex_lock(&pf->lock);
	if (pf->tail)
		pf->tail->next = job;
	else
		pf->head = job;
	pf->tail = job;
	pf->queued_now++;
	pf->queued++;
	pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->lock);
	return 0;
}

void pf_get_stats(struct pf *pf, struct pf_stats *out)
{
	pthread_mutex_lock(&pf->lock);
	out->queued = pf->queued;
	out->done = pf->done;
	out->dropped = pf->dropped;
	out->errors = pf->errors;
	out->workers = pf->nworkers;
	out->stagers = pf->nstagers;
	out->stage_seconds = pf->stage_done ? pf->stage_seconds :
					      mono_since(&pf->stage_start);
	pthread_mutex_unlock(&pf->lock);
}

void pf_stage_resume(struct pf *pf)
{
	pthread_mutex_lock(&pf->lock);
	if (pf->nstagers) {
		pf->resumes++;
		pf->stage_done = false;
		clock_gettime(CLOCK_MONOTONIC, &pf->stage_start);
		pthread_cond_broadcast(&pf->resume);
	}
	pthread_mutex_unlock(&pf->lock);
}

int pf_wait_staged(struct pf *pf, int timeout_ms)
{
	struct timespec deadline;
	int err = 0;

	if (timeout_ms >= 0)
		deadline_in_ms(&deadline, timeout_ms);
	pthread_mutex_lock(&pf->lock);
	while (!pf->stage_done && !pf->stopping && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&pf->staged, &pf->lock);
		else
			err = -pthread_cond_timedwait(&pf->staged, &pf->lock,
						      &deadline);
	}
	pthread_mutex_unlock(&pf->lock);
	return err == -ETIMEDOUT ? -ETIMEDOUT : 0;
}
