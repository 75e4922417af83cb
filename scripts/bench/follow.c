/*
 * The follow case of scripts/bench-fanout.sh as one C process, not a test: N watchers follow one
 * table as `tsync watch` does (a held read, `Prefer: wait=25`, from a checkpoint `updatedAt, id`,
 * asked again at once after each page), while a writer POSTs R single records a second for S
 * seconds over W keep-alive connections (default 128), alternating between the servers. It measures what
 * fanout.py's follow mode measures and prints the same lines; it exists because 1,000 Python
 * watchers took as much of the two cores as the server they measured (docs/PERFORMANCE.md,
 * "Fan-out"): the watchers stand for 1,000 other machines, so their own CPU should be small.
 *
 *   follow URL... --watchers N --rate R --seconds S [--writers W] [--pid PID[,PID]] [--table T] [--stream]
 *
 * With --stream, each held read asks `Prefer: wait=25, stream` (docs/DESIGN.md §8.1): a server
 * that streams answers with pages as lines of one chunked answer, each line read as a page as it
 * comes, and the watcher asks again when the answer ends; one that does not answers as without it.
 *
 * The writes stand for many clients', each sent on time whatever the server's answers to the others:
 * a connection sends its next write once its last is answered, so W connections reach R writes/s
 * only while a write's round trip stays under W/R. With 16, a write answered in 60 ms held the
 * table at 266 writes/s, a limit of this process, not of the server (docs/PERFORMANCE.md,
 * "Fan-out"); the writes' round trips are printed beside the deliveries.
 *
 * One epoll loop holds every connection. An answer's time is the kernel's time of its arrival
 * (SO_TIMESTAMPNS), not when the loop got round to it; a record's delivery is that time less
 * its updatedAt. The time a record waited for its watcher to ask (the record was committed while
 * the watcher's previous page was on its way) is the client's part; the rest is the server's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_URLS 8
/* The most writer connections (--writers). */
#define MAX_WRITERS 1024
/* Latencies are counted in 10 µs bins up to 60 s; later ones fall in the last. */
#define BIN_SECONDS 1e-5
#define BINS 6000000

enum kind { WATCHER, WRITER, METRICS };

struct conn {
    enum kind kind;
    int fd;
    int url;
    char *buffer;
    size_t length, capacity;
    double sent;    /* when the request now out was sent */
    double arrived; /* the previous page's arrival (kernel time) */
    long got;       /* records received */
    int busy;       /* a writer's request is out */
    int closed;
    char stamp[40]; /* the checkpoint: the last record's updatedAt and id */
    char id[128];
    double gauge; /* METRICS: the value read, -1 until the answer is whole */
    double posted; /* WRITER: when the write now out was sent */
    int streaming; /* WATCHER: a streamed answer's head was read, its lines are coming */
};

struct histogram {
    uint32_t *bins;
    long count;
    double max;
};

static struct {
    char host[64];
    int port;
} urls[MAX_URLS];
static int url_count;
static const char *table = "feed";
static int stream; /* --stream */
static int epoll_fd;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what) {
    perror(what);
    exit(2);
}

static void histogram_add(struct histogram *h, double seconds) {
    if (seconds < 0) seconds = 0;
    long bin = (long)(seconds / BIN_SECONDS);
    if (bin >= BINS) bin = BINS - 1;
    h->bins[bin]++;
    h->count++;
    if (seconds > h->max) h->max = seconds;
}

/* As fanout.py's percentile: the value at rank round(p/100 × (n−1)), to the bin's start. */
static double percentile(const struct histogram *h, double p) {
    if (h->count == 0) return NAN;
    long rank = lround(p / 100 * (h->count - 1)), seen = 0;
    for (long bin = 0; bin < BINS; bin++) {
        seen += h->bins[bin];
        if (seen > rank) return bin * BIN_SECONDS;
    }
    return h->max;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS.fffZ`. */
/* An `updatedAt` (`2026-11-30T14:40:20.683Z`) in seconds since 1970. A page's records share their
 * minute, worked out once: the watchers stand for other machines, so their CPU is kept small. */
static double stamp_seconds(const char *s) {
    static char minute[17];
    static double minute_seconds;
    if (memcmp(s, minute, sizeof minute) != 0) {
        long year = strtol(s, NULL, 10), month = strtol(s + 5, NULL, 10), day = strtol(s + 8, NULL, 10);
        long hours = strtol(s + 11, NULL, 10), minutes = strtol(s + 14, NULL, 10);
        minute_seconds = days_from_civil(year, month, day) * 86400.0 + hours * 3600 + minutes * 60;
        memcpy(minute, s, sizeof minute);
    }
    const char *t = s + 17; /* `20.683Z` as the server writes it, any other way by strtod */
    if (t[0] >= '0' && t[0] <= '9' && t[1] >= '0' && t[1] <= '9' && t[2] == '.' && t[3] >= '0' && t[3] <= '9' &&
        t[4] >= '0' && t[4] <= '9' && t[5] >= '0' && t[5] <= '9' && t[6] == 'Z')
        return minute_seconds + (t[0] - '0') * 10 + (t[1] - '0') + ((t[3] - '0') * 100 + (t[4] - '0') * 10 + (t[5] - '0')) / 1e3;
    return minute_seconds + strtod(t, NULL);
}

/* The last `key` in [body, end), or NULL: a page's last record's fields are near its end. */
static char *last_of(char *body, char *end, const char *key, size_t n) {
    if ((size_t)(end - body) < n) return NULL;
    /* `room`: the places a match may start, [body, body + room). */
    for (size_t room = (size_t)(end - body) - n + 1; room > 0;) {
        char *p = memrchr(body, key[0], room);
        if (!p) return NULL;
        if (memcmp(p, key, n) == 0) return p;
        room = (size_t)(p - body);
    }
    return NULL;
}

static int connect_to(int url) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(urls[url].port)};
    if (inet_pton(AF_INET, urls[url].host, &address.sin_addr) != 1) {
        struct hostent *host = gethostbyname(urls[url].host);
        if (!host) fail("resolve");
        memcpy(&address.sin_addr, host->h_addr_list[0], sizeof address.sin_addr);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(struct conn *c, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = send(c->fd, data, length, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            c->closed = 1;
            return;
        }
        data += n;
        length -= (size_t)n;
    }
}

/* Percent-encodes as Python's urllib.parse.quote(text, safe="'()"). */
static size_t quote(char *out, const char *text) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("_.-~'()", *p)) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = 0;
    return n;
}

/* The watcher's next read: every record after its checkpoint, oldest first, as fanout.py asks. */
static void ask(struct conn *c) {
    char expression[512], quoted[1536], request[2048];
    if (!c->stamp[0]) {
        snprintf(expression, sizeof expression, "updatedAt gt datetimeoffset'2000-01-01T00:00:00.000Z'");
    } else {
        snprintf(expression, sizeof expression,
                 "updatedAt ge datetimeoffset'%s' and (updatedAt gt datetimeoffset'%s' or "
                 "(updatedAt eq datetimeoffset'%s' and id gt '%s'))",
                 c->stamp, c->stamp, c->stamp, c->id);
    }
    quote(quoted, expression);
    int n = snprintf(request, sizeof request,
                     "GET /tables/%s?$filter=%s&$orderby=updatedAt,id&$top=1000&__includeDeleted=true HTTP/1.1\r\n"
                     "Host: %s:%d\r\nZUMO-API-VERSION: 2.0.0\r\nPrefer: wait=25%s\r\n\r\n",
                     table, quoted, urls[c->url].host, urls[c->url].port, stream ? ", stream" : "");
    send_all(c, request, (size_t)n);
    c->sent = now();
}

static void post_record(struct conn *c, long i) {
    char body[64], request[512];
    int b = snprintf(body, sizeof body, "{\"id\": \"w%08ld\", \"n\": %ld}", i, i);
    int n = snprintf(request, sizeof request,
                     "POST /tables/%s HTTP/1.1\r\nHost: %s:%d\r\nZUMO-API-VERSION: 2.0.0\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     table, urls[c->url].host, urls[c->url].port, b, body);
    send_all(c, request, (size_t)n);
    c->busy = 1;
    c->posted = now();
}

static struct conn *open_conn(enum kind kind, int url) {
    struct conn *c = calloc(1, sizeof *c);
    if (!c) fail("calloc");
    c->kind = kind;
    c->url = url;
    c->fd = connect_to(url);
    c->capacity = 1 << 16;
    c->buffer = malloc(c->capacity);
    if (!c->buffer) fail("malloc");
    c->gauge = -1;
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &event) != 0) fail("epoll_ctl");
    return c;
}

static void close_conn(struct conn *c) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->closed = 1;
}

/* Reads what the socket has into the connection's buffer; the kernel's time of its arrival. */
static ssize_t receive(struct conn *c, double *arrival) {
    if (c->capacity - c->length < 1 << 16) {
        c->capacity *= 2;
        c->buffer = realloc(c->buffer, c->capacity);
        if (!c->buffer) fail("realloc");
    }
    char control[256];
    struct iovec io = {.iov_base = c->buffer + c->length, .iov_len = c->capacity - c->length - 1};
    struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(c->fd, &message, MSG_DONTWAIT);
    if (n <= 0) return n;
    *arrival = now();
    for (struct cmsghdr *m = CMSG_FIRSTHDR(&message); m; m = CMSG_NXTHDR(&message, m)) {
        if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SO_TIMESTAMPNS) {
            struct timespec t;
            memcpy(&t, CMSG_DATA(m), sizeof t);
            *arrival = t.tv_sec + t.tv_nsec / 1e9;
        }
    }
    c->length += (size_t)n;
    c->buffer[c->length] = 0;
    return n;
}

/* When the buffer starts with a whole response: its body (de-chunked in place), and the bytes
 * the response took; else 0. A streamed answer's head (--stream) alone is taken: its lines
 * come as `stream_line` finds them. */
static size_t whole_response(struct conn *c, char **body, size_t *body_length) {
    char *end = memmem(c->buffer, c->length, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t start = (size_t)(end - c->buffer) + 4;
    if (stream && c->kind == WATCHER) {
        /* The head ends with CR LF CR LF: each field's line ends with a CR LF within it. */
        char *applied = memmem(c->buffer, start, "\r\nPreference-Applied:", 21), *applied_end = NULL;
        if (applied) applied_end = memmem(applied + 2, start - (size_t)(applied + 2 - c->buffer), "\r\n", 2);
        if (applied && applied_end && memmem(applied, (size_t)(applied_end - applied), "stream", 6)) {
            c->streaming = 1;
            *body = NULL;
            *body_length = 0;
            return start;
        }
    }
    /* Each field's line starts after a CR LF: only those places are compared. */
    for (char *line = memchr(c->buffer, '\r', (size_t)(end - c->buffer)); line && line < end;
         line = memchr(line + 1, '\r', (size_t)(end - line - 1))) {
        if (strncasecmp(line, "\r\ncontent-length:", 17) == 0) {
            size_t length = strtoul(line + 17, NULL, 10);
            if (c->length < start + length) return 0;
            *body = c->buffer + start;
            *body_length = length;
            return start + length;
        }
        if (strncasecmp(line, "\r\ntransfer-encoding: chunked", 28) == 0) {
            size_t at = start, written = start;
            for (;;) {
                char *line_end = memmem(c->buffer + at, c->length - at, "\r\n", 2);
                if (!line_end) return 0;
                size_t size = strtoul(c->buffer + at, NULL, 16), data = (size_t)(line_end - c->buffer) + 2;
                if (size == 0) {
                    if (c->length < data + 2) return 0;
                    *body = c->buffer + start;
                    *body_length = written - start;
                    return data + 2;
                }
                if (c->length < data + size + 2) return 0;
                memmove(c->buffer + written, c->buffer + data, size);
                written += size;
                at = data + size + 2;
            }
        }
    }
    *body = c->buffer + start;
    *body_length = 0;
    return start;
}

/* When the buffer starts with a whole chunk of a streamed answer: its line (the chunk's data),
 * and the bytes the chunk took, with *body NULL for the last (the answer's end); else 0. */
static size_t stream_line(struct conn *c, char **body, size_t *body_length) {
    char *line_end = memmem(c->buffer, c->length, "\r\n", 2);
    if (!line_end) return 0;
    size_t size = strtoul(c->buffer, NULL, 16), data = (size_t)(line_end - c->buffer) + 2;
    if (c->length < data + size + 2) return 0;
    *body = size ? c->buffer + data : NULL;
    *body_length = size;
    return data + size + 2;
}

static void consume(struct conn *c, size_t used) {
    memmove(c->buffer, c->buffer + used, c->length - used);
    c->length -= used;
    c->buffer[c->length] = 0;
}

static struct histogram latencies, servers, lags, gaps, trips;
static long pages;

/* A watcher's page: each record's delivery, the checkpoint moved to its last record, and (unless
 * it is a line of a streamed answer, which goes on) the next read sent at once. */
static void watcher_page(struct conn *c, char *body, size_t length, double arrival, int more) {
    static const char stamp_key[] = "\"updatedAt\":\"", id_key[] = "\"id\":\"";
    pages++;
    if (c->arrived > 0) histogram_add(&gaps, arrival - c->arrived);
    char *end = body + length, *last = NULL;
    long found = 0;
    for (char *p = body; (p = memmem(p, (size_t)(end - p), stamp_key, sizeof stamp_key - 1)); ) {
        p += sizeof stamp_key - 1;
        char *close = memchr(p, '"', (size_t)(end - p));
        if (!close || close - p >= (long)sizeof c->stamp) break;
        double committed = stamp_seconds(p), latency = arrival - committed;
        double own = committed < c->sent ? c->sent - (committed > c->arrived ? committed : c->arrived) : 0;
        histogram_add(&latencies, latency);
        histogram_add(&servers, latency - own);
        last = p;
        found++;
        p = close;
    }
    c->arrived = arrival;
    if (found) {
        c->got += found;
        char *close = memchr(last, '"', (size_t)(end - last));
        memcpy(c->stamp, last, (size_t)(close - last));
        c->stamp[close - last] = 0;
        char *id = last_of(body, end, id_key, sizeof id_key - 1);
        if (id) {
            id += sizeof id_key - 1;
            char *id_end = memchr(id, '"', (size_t)(end - id));
            size_t n = id_end && id_end - id < (long)sizeof c->id ? (size_t)(id_end - id) : 0;
            memcpy(c->id, id, n);
            c->id[n] = 0;
        }
    }
    if (more) return;
    ask(c);
    if (found) histogram_add(&lags, now() - arrival);
}

static long writes_sent, writes_failed;

static void handle(struct conn *c) {
    double arrival = 0;
    ssize_t n = receive(c, &arrival);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        if (c->kind == METRICS) {
            char *value = strstr(c->buffer, "\ntsync_live_waiting ");
            if (!value) value = strstr(c->buffer, "\ntsync_live_waiting{");
            c->gauge = 0;
            if (value) {
                char *line_end = strchr(value + 1, '\n');
                if (line_end) *line_end = 0;
                char *space = strrchr(value, ' ');
                if (space) c->gauge = strtod(space + 1, NULL);
            }
        }
        close_conn(c); /* a watcher reset by the server counts as never answered again */
        return;
    }
    if (c->kind == METRICS) return;
    char *body;
    size_t length, used;
    for (;;) {
        if (c->closed) break;
        if (c->streaming) {
            if ((used = stream_line(c, &body, &length)) == 0) break;
            if (body) {
                watcher_page(c, body, length, arrival, 1);
                consume(c, used);
            } else {
                c->streaming = 0;
                consume(c, used);
                ask(c);
            }
            continue;
        }
        if ((used = whole_response(c, &body, &length)) == 0) break;
        if (c->streaming) {
            consume(c, used);
            continue;
        }
        if (c->kind == WATCHER) {
            watcher_page(c, body, length, arrival, 0);
        } else {
            histogram_add(&trips, arrival - c->posted);
            writes_sent++;
            writes_failed += memmem(body, length, "\"updatedAt\"", 11) == NULL;
            c->busy = 0;
        }
        consume(c, used);
    }
}

/* Runs the loop for at most `seconds` (from now), or less when `done` says so first. */
static void run(double seconds, int (*done)(void)) {
    struct epoll_event events[256];
    double until = now() + seconds;
    while (now() < until && !(done && done())) {
        int n = epoll_wait(epoll_fd, events, 256, 1);
        for (int i = 0; i < n; i++) handle(events[i].data.ptr);
    }
}

static struct conn *metrics[MAX_URLS];
static int metrics_done(void) {
    for (int u = 0; u < url_count; u++)
        if (!metrics[u]->closed) return 0;
    return 1;
}

/* The servers' tsync_live_waiting gauges, summed; the watchers are served meanwhile. */
static double waiting(void) {
    for (int u = 0; u < url_count; u++) {
        metrics[u] = open_conn(METRICS, u);
        char request[256];
        int n = snprintf(request, sizeof request, "GET /metrics HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n",
                         urls[u].host, urls[u].port);
        send_all(metrics[u], request, (size_t)n);
    }
    run(5, metrics_done);
    double sum = 0;
    for (int u = 0; u < url_count; u++) {
        sum += metrics[u]->gauge > 0 ? metrics[u]->gauge : 0;
        if (!metrics[u]->closed) close_conn(metrics[u]);
        free(metrics[u]->buffer);
        free(metrics[u]);
    }
    return sum;
}

static int wait_held(long total, double seconds) {
    double deadline = now() + seconds;
    while (now() < deadline) {
        if (waiting() >= total) return 1;
        run(0.1, NULL);
    }
    return 0;
}

static double cpu_seconds(const char *pids) {
    double sum = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", pids);
    for (char *pid = strtok(copy, ","); pid; pid = strtok(NULL, ",")) {
        char path[64], text[4096];
        snprintf(path, sizeof path, "/proc/%s/stat", pid);
        FILE *file = fopen(path, "r");
        if (!file) continue;
        size_t n = fread(text, 1, sizeof text - 1, file);
        fclose(file);
        text[n] = 0;
        char *after = strrchr(text, ')');
        unsigned long user = 0, system = 0;
        if (after && sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &user, &system) == 2)
            sum += (double)(user + system) / sysconf(_SC_CLK_TCK);
    }
    return sum;
}

int main(int argc, char **argv) {
    long watchers = 1000, rate = 1000, writer_count = 128;
    double seconds = 10;
    const char *pids = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--watchers") == 0 && i + 1 < argc) watchers = atol(argv[++i]);
        else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) rate = atol(argv[++i]);
        else if (strcmp(argv[i], "--writers") == 0 && i + 1 < argc) writer_count = atol(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) pids = argv[++i];
        else if (strcmp(argv[i], "--table") == 0 && i + 1 < argc) table = argv[++i];
        else if (strcmp(argv[i], "--stream") == 0) stream = 1;
        else if (strncmp(argv[i], "http://", 7) == 0 && url_count < MAX_URLS) {
            if (sscanf(argv[i] + 7, "%63[^:]:%d", urls[url_count].host, &urls[url_count].port) != 2) {
                fprintf(stderr, "follow: %s: expected http://HOST:PORT\n", argv[i]);
                return 2;
            }
            url_count++;
        } else {
            fprintf(stderr, "usage: follow URL... --watchers N --rate R --seconds S [--writers W] [--pid PID[,PID]] "
                            "[--table T] [--stream]\n");
            return 2;
        }
    }
    if (url_count == 0) {
        fprintf(stderr, "follow: no server URL\n");
        return 2;
    }
    if (writer_count < 1 || writer_count > MAX_WRITERS) {
        fprintf(stderr, "follow: --writers: from 1 to %d\n", MAX_WRITERS);
        return 2;
    }
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    latencies.bins = calloc(BINS, sizeof(uint32_t));
    servers.bins = calloc(BINS, sizeof(uint32_t));
    lags.bins = calloc(BINS, sizeof(uint32_t));
    gaps.bins = calloc(BINS, sizeof(uint32_t));
    trips.bins = calloc(BINS, sizeof(uint32_t));
    epoll_fd = epoll_create1(0);
    if (!latencies.bins || !servers.bins || !lags.bins || !gaps.bins || !trips.bins || epoll_fd < 0) fail("start");

    struct conn **watching = calloc((size_t)watchers + 1, sizeof *watching);
    for (long i = 0; i < watchers; i++) {
        watching[i] = open_conn(WATCHER, (int)(i % url_count));
        ask(watching[i]);
    }
    wait_held(watchers, 60);
    struct rusage before;
    getrusage(RUSAGE_SELF, &before);
    double cpu_before = cpu_seconds(pids);

    struct conn *writers[MAX_WRITERS];
    for (int k = 0; k < writer_count; k++) writers[k] = open_conn(WRITER, k % url_count);
    long total = lround(rate * seconds), i = 0;
    double start = now();
    struct epoll_event events[256];
    for (;;) {
        int busy = 0;
        for (int k = 0; k < writer_count; k++) busy |= writers[k]->busy;
        if (i >= total && !busy) break;
        for (int k = 0; k < writer_count && i < total && start + (double)i / rate <= now(); k++)
            if (!writers[k]->busy) post_record(writers[k], i++);
        double wait = i < total ? start + (double)i / rate - now() : 0.5;
        struct timespec timeout = {.tv_sec = 0, .tv_nsec = wait > 0 ? (long)(fmin(wait, 0.5) * 1e9) : 0};
        int n = epoll_pwait2(epoll_fd, events, 256, &timeout, NULL);
        for (int e = 0; e < n; e++) handle(events[e].data.ptr);
    }
    double written_seconds = now() - start;
    /* Every watcher has every record, or 10 s have passed: the servers hold every watcher again. */
    wait_held(watchers, 10);
    double cpu = cpu_seconds(pids) - cpu_before;
    run(1, NULL);
    struct rusage after;
    getrusage(RUSAGE_SELF, &after);
    double own_cpu = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
                     (after.ru_stime.tv_sec - before.ru_stime.tv_sec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;

    long delivered = writes_sent - writes_failed, behind = 0, fewest = watchers ? -1 : 0;
    for (long w = 0; w < watchers; w++) {
        behind += watching[w]->got < delivered;
        if (fewest < 0 || watching[w]->got < fewest) fewest = watching[w]->got;
    }
    printf("writes   %ld in %.1f s (%.0f/s, %ld failed) over %d server(s), %ld connections; a write's round trip: "
           "p50 %.1f ms  p99 %.1f ms\n", writes_sent, written_seconds, writes_sent / written_seconds, writes_failed,
           url_count, writer_count, percentile(&trips, 50) * 1000, percentile(&trips, 99) * 1000);
    printf("follow   %ld watchers, %ld deliveries of %ld in %ld answers (or lines): p50 %.1f ms  p99 %.1f ms  max %.1f ms; "
           "%ld watchers short of every record (fewest %ld)\n",
           watchers, latencies.count, delivered * watchers, pages, percentile(&latencies, 50) * 1000,
           percentile(&latencies, 99) * 1000, latencies.max * 1000, behind, fewest);
    if (pids[0])
        printf("cpu      the server(s) from the first write to every watcher held again: %.2f s user+system, "
               "%.2f ms a write\n", cpu, cpu / (writes_sent > 0 ? writes_sent : 1) * 1e3);
    printf("server   the same deliveries less the time the record waited for the watcher's client to ask: "
           "p50 %.1f ms  p99 %.1f ms\n", percentile(&servers, 50) * 1000, percentile(&servers, 99) * 1000);
    printf("cycle    from one page's arrival to the same watcher's next: p50 %.1f ms  p90 %.1f ms  p99 %.1f ms "
           "(a record waits at most about one)\n", percentile(&gaps, 50) * 1000, percentile(&gaps, 90) * 1000,
           percentile(&gaps, 99) * 1000);
    printf("client   from a page's arrival to the watcher's next request: p50 %.1f ms  p99 %.1f ms "
           "(counted above: a record committed meanwhile waits for it)\n",
           percentile(&lags, 50) * 1000, percentile(&lags, 99) * 1000);
    printf("client   CPU of the watchers' process (C, one epoll loop), the writes on: %.2f s "
           "(shares the cores with the server)\n", own_cpu);
    printf("summary follow%s %ld x %ld/s on %d server(s): p99 %.1f ms, %.0f writes/s, %ld behind\n", stream ? " (streamed)" : "", watchers, rate,
           url_count, percentile(&latencies, 99) * 1000, writes_sent / written_seconds, behind);
    return 0;
}
