/* A native (non-Python) test target for perf's lock-wait view.
 *
 * 4 "worker" threads take one pthread mutex for ~200 us of work each time (contended:
 * they wait in __lll_lock_wait), 2 "idler" threads wait on a condition variable that is
 * signalled twice a second (waiting for work: pthread_cond_wait). Prints "ready" once every
 * thread runs, exits after --seconds S.  Build: cc -O1 -pthread -o perf_mutex perf_mutex.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int stop = 0;
static volatile unsigned long counter = 0;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin(double seconds) {
    double end = now() + seconds;
    while (now() < end)
        counter++;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    while (!stop) {
        pthread_mutex_lock(&lock);
        spin(200e-6); /* the critical section */
        pthread_mutex_unlock(&lock);
        spin(20e-6);
    }
    return NULL;
}

static void *idler(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "idler");
    pthread_mutex_lock(&cond_lock);
    while (!stop)
        pthread_cond_wait(&cond, &cond_lock);
    pthread_mutex_unlock(&cond_lock);
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = 30;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
    pthread_t t[6];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 4; i < 6; i++)
        pthread_create(&t[i], NULL, idler, NULL);
    printf("ready\n");
    fflush(stdout);
    double end = now() + seconds;
    while (now() < end) {
        usleep(500000);
        pthread_mutex_lock(&cond_lock);
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&cond_lock);
    }
    stop = 1;
    pthread_mutex_lock(&cond_lock);
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&cond_lock);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    printf("{\"counter\": %lu}\n", counter);
    return 0;
}
