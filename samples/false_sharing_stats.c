/* The native part of samples/false_sharing_service.py: score one request's features and
 * count them in the calling worker's row of a shared statistics array (a NumPy int64 array
 * of shape (workers, stride)). Called through ctypes, which releases the GIL, so the workers
 * run it in parallel. With stride 2 (16-byte rows) four workers' rows share a 64-byte cache
 * line: false sharing. With stride 8 and a 64-byte aligned array, each row has its line.
 *
 * Build: cc -O2 -g -pthread -fno-omit-frame-pointer -shared -fPIC -o libfs_stats.so
 *        false_sharing_stats.c  (samples/_native.py does it)
 */
#include <stddef.h>

/* Returns the request's score; counts items and positive items in stats[worker]. */
double score_request(const float *features, long n, long *stats, long stride, long worker) {
    long *row = stats + worker * stride;
    double score = 0;
    for (long i = 0; i < n; i++) {
        float v = features[i] * 0.75f + 0.25f;
        score += v;
        __atomic_fetch_add(&row[0], 1, __ATOMIC_RELAXED); /* items seen */
        if (v > 0.5f)
            __atomic_fetch_add(&row[1], 1, __ATOMIC_RELAXED); /* positive items */
    }
    return score;
}
