// SPDX-License-Identifier: MIT
/*
 * This file implements the prefetcher declared in prefetch.h: the readahead
 * worker pool with its bounded job queue.
 */
#define LOG_MOD "prefetch"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prefetch/prefetch.h"
#include "util/compiler.h"
#include "util/log.h"

#define PF_MAX_WORKERS 64
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
	struct pf_job *head, *tail; /* the queue */
	unsigned int queued_now; /* jobs in the queue */
	unsigned int queue_max; /* the most allowed */
	bool stopping; /* pf_free() was called */
	pthread_t workers[PF_MAX_WORKERS];
	unsigned int nworkers; /* threads started */
	uint64_t queued, done, dropped, errors; /* counters */
};

static void *worker_main(void *arg)
{
	struct pf *pf = arg;
	const struct img_read_ctx rc = { IMG_READ_READAHEAD, NULL };
	struct pf_job *job;
	int err;

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

		err = img_file_prefetch(pf->img, &rc, &job->ino, job->first,
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
	struct pf_opts def = { 0, 256 };
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

	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	n = opts->workers ? opts->workers : (unsigned int)MAX(cpus, 1L);
	n = MIN(n, (unsigned int)PF_MAX_WORKERS);
	for (; pf->nworkers < n; pf->nworkers++) {
		err = -pthread_create(&pf->workers[pf->nworkers], NULL,
				      worker_main, pf);
		if (err)
			goto out_free;
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
	pthread_mutex_unlock(&pf->lock);
	for (unsigned int i = 0; i < pf->nworkers; i++)
		pthread_join(pf->workers[i], NULL);
	while ((job = pf->head)) {
		pf->head = job->next;
		free(job);
	}
	pthread_cond_destroy(&pf->work);
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
	pthread_mutex_unlock(&pf->lock);
}
