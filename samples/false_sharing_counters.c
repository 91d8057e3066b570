/* Per-worker statistics counters, and what their layout costs (false sharing).
 *
 * N worker threads serve "requests" of ITEMS items each. For every item a worker does a
 * little arithmetic and updates its statistics: items seen and bytes seen, with relaxed
 * atomic adds (what a C++ service's std::atomic<long> per-worker stats compile to). The
 * layouts (one flag each):
 *
 *   (default)   adjacent slots: struct { long items, bytes; } stats[N]. Four workers'
 *               slots share one 64-byte cache line: every add takes the line from the
 *               other cores although no worker touches another's counters (FALSE SHARING)
 *   --pad       each worker's slot aligned to 64 bytes, alone on its cache line (the fix)
 *   --shared    every worker adds to one shared slot (TRUE SHARING: one hot address)
 *   --private   each worker counts in a slot on its own stack (no shared memory: control)
 *
 * Options: --threads N (2), --seconds S (60), --timestamps PATH (each request's end time,
 * CLOCK_MONOTONIC seconds = Python's time.monotonic(), one per line, written on exit),
 * --quiet. Prints "ready" once the workers run; on exit (after --seconds, or on SIGTERM or
 * SIGINT) one JSON line like samples/_harness.py's, with items_per_s.
 *
 * Build: cc -O2 -g -pthread -fno-omit-frame-pointer -o false_sharing_counters
 *        false_sharing_counters.c  (samples/false_sharing_native.py does it and runs it)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ITEMS 100000 /* items per request */
#define MAX_THREADS 64

struct slot {
    long items;
    long bytes;
};
struct padded_slot {
    struct slot s;
} __attribute__((aligned(64)));

static struct slot adjacent[MAX_THREADS] __attribute__((aligned(64)));
static struct padded_slot padded[MAX_THREADS];
static struct slot shared __attribute__((aligned(64)));

enum layout { ADJACENT, PADDED, SHARED, PRIVATE };
static const char *layout_names[] = {"adjacent", "padded", "shared", "private"};
static enum layout layout = ADJACENT;
static volatile sig_atomic_t stop = 0;

struct worker {
    pthread_t thread;
    int id;
    long requests;
    long items;
    double *ends;   /* end time of each request */
    double *lat;    /* its duration */
    long cap;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

/* One request: ITEMS items, each counted in the worker's statistics slot. */
static unsigned long serve(struct slot *s, unsigned long x) {
    for (int i = 0; i < ITEMS; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL; /* the item's "work" */
        __atomic_fetch_add(&s->items, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->bytes, (long)(x >> 58) + 1, __ATOMIC_RELAXED);
    }
    return x;
}

static void *run(void *arg) {
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%d", w->id);
    pthread_setname_np(pthread_self(), name);
    struct slot local = {0, 0};
    struct slot *s = layout == ADJACENT ? &adjacent[w->id]
                     : layout == PADDED ? &padded[w->id].s
                     : layout == SHARED ? &shared
                                        : &local;
    unsigned long x = (unsigned long)w->id + 1;
    while (!stop) {
        double t0 = now();
        x = serve(s, x);
        double t1 = now();
        if (w->requests == w->cap) {
            long cap = w->cap ? 2 * w->cap : 4096;
            double *e = realloc(w->ends, cap * sizeof(double));
            double *l = realloc(w->lat, cap * sizeof(double));
            if (!e || !l) {
                free(e ? e : w->ends);
                free(l ? l : w->lat);
                fprintf(stderr, "out of memory\n");
                exit(1);
            }
            w->ends = e, w->lat = l, w->cap = cap;
        }
        w->ends[w->requests] = t1;
        w->lat[w->requests] = t1 - t0;
        w->requests++;
    }
    w->items = w->requests * (long)ITEMS;
    __asm__ volatile("" : : "r"(x), "r"(local.items) : "memory");
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int threads = 2, quiet = 0;
    double seconds = 60;
    const char *timestamps = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pad"))
            layout = PADDED;
        else if (!strcmp(argv[i], "--shared"))
            layout = SHARED;
        else if (!strcmp(argv[i], "--private"))
            layout = PRIVATE;
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--timestamps") && i + 1 < argc)
            timestamps = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--pad|--shared|--private] [--threads N] [--seconds S] "
                    "[--timestamps PATH] [--quiet]\n",
                    argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "--threads must be 1 to %d\n", MAX_THREADS);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct worker *ws = calloc(threads, sizeof *ws);
    double start = now();
    for (int i = 0; i < threads; i++) {
        ws[i].id = i;
        pthread_create(&ws[i].thread, NULL, run, &ws[i]);
    }
    printf("ready\n");
    fflush(stdout);
    while (!stop && now() - start < seconds)
        usleep(20000);
    stop = 1;
    long requests = 0, items = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ws[i].thread, NULL);
        requests += ws[i].requests;
        items += ws[i].items;
    }
    double elapsed = now() - start;
    double *lat = malloc((requests ? requests : 1) * sizeof(double));
    long k = 0;
    FILE *ts = timestamps ? fopen(timestamps, "w") : NULL;
    for (int i = 0; i < threads; i++)
        for (long j = 0; j < ws[i].requests; j++) {
            lat[k++] = ws[i].lat[j];
            if (ts)
                fprintf(ts, "%.6f\n", ws[i].ends[j]);
        }
    if (ts)
        fclose(ts);
    qsort(lat, requests, sizeof(double), cmp);
    double p50 = requests ? lat[requests / 2] * 1000 : 0;
    double p99 = requests ? lat[(long)(requests * 0.99)] * 1000 : 0;
    if (!quiet)
        printf("{\"sample\": \"false_sharing_counters\", \"layout\": \"%s\", \"threads\": %d, "
               "\"requests\": %ld, \"seconds\": %.3f, \"rps\": %.2f, \"items_per_s\": %.0f, "
               "\"p50_ms\": %.3f, \"p99_ms\": %.3f}\n",
               layout_names[layout], threads, requests, elapsed, requests / elapsed,
               items / elapsed, p50, p99);
    return 0;
}
