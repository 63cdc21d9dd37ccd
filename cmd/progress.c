/* The terminal progress display of pull and prefetch, fed by the library's progress
 * reports: one line redrawn in place, as docker and podman do, with the layer being
 * fetched, the image's totals, the speed and an ETA; cached layers are named as such and
 * never counted as downloaded. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* A frame at least this often while bytes arrive, and one at every 5% of the image. */
#define FRAME_INTERVAL 0.1
#define FRAME_STEPS 20

static struct {
  int on_line;        /* a frame is on the line, not yet ended by a newline */
  int have_byte;      /* the speed clock runs from the image's first byte */
  double first_byte;  /* seconds */
  double last_frame;  /* seconds */
  uint64_t last_step; /* of FRAME_STEPS, at the last frame */
  int unpacking;      /* 1 + the layer being unpacked, 0 before the unpack phase */
  int shown;          /* columns of the frame on the line */
  int width;          /* the terminal's columns */
} bar;

/* ---- the terminal's width: TIOCGWINSZ, else $COLUMNS, else 80; read again on SIGWINCH ---- */

static volatile sig_atomic_t resized = 1;

static void on_winch(int sig)
{
  (void)sig;
  resized = 1;
}

static int term_width(void)
{
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char *c = getenv("COLUMNS");
  long n = c ? strtol(c, NULL, 10) : 0;
  return n >= 10 && n <= 1000 ? (int)n : 80;
}

/* Starts a frame: back to its line's start, erased. A frame that the terminal wrapped
 * (narrowed since it was drawn) took more rows: go up to its first and erase below. */
static void frame_start(void)
{
  int up = 0;
  if (resized) {
    resized = 0;
    int w = term_width();
    if (bar.on_line && bar.width && w < bar.width && bar.shown > w)
      up = (bar.shown - 1) / w;
    bar.width = w;
  }
  if (up > 0)
    fprintf(stderr, "\r\033[%dA\033[J", up);
  else
    fputs("\r\033[K", stderr);
}

/* Appends to a frame being built. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
  if (*len >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n > 0)
    *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* Writes a frame cut to the terminal's width less one column (a full row would move the
 * cursor to the next one on some terminals). */
static void frame_put(const char *text, size_t len)
{
  int room = (bar.width ? bar.width : 80) - 1;
  if ((int)len > room)
    len = (size_t)(room > 0 ? room : 0);
  fwrite(text, 1, len, stderr);
  bar.shown = (int)len;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *cli_human_bytes(char *buf, size_t len, uint64_t n)
{
  static const char *const units[] = {"kB", "MB", "GB", "TB", "PB"};
  if (n < 1000) {
    snprintf(buf, len, "%llu B", (unsigned long long)n);
    return buf;
  }
  double v = (double)n / 1000;
  size_t u = 0;
  while (v >= 999.95 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1000;
    u++;
  }
  snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

static const char *duration(char *buf, size_t len, double secs)
{
  unsigned long s = (unsigned long)(secs + 0.5);
  if (s >= 3600)
    snprintf(buf, len, "%luh%02lum", s / 3600, s / 60 % 60);
  else if (s >= 60)
    snprintf(buf, len, "%lum%02lus", s / 60, s % 60);
  else
    snprintf(buf, len, "%lus", s);
  return buf;
}

static const char *hex12(const char *digest)
{
  const char *c = digest ? strchr(digest, ':') : NULL;
  return c ? c + 1 : digest ? digest : "";
}

/* Ends a frame left on the line, so that what is printed next starts on a line of its own. */
int cli_progress_break(void)
{
  if (bar.on_line) {
    fputc('\n', stderr);
    bar.on_line = 0;
    return 1;
  }
  return 0;
}

/* One frame; the layer's own part goes first when the line is too narrow for all. */
static void draw(const struct fpull_progress *p, double now)
{
  char a[32], b[32], c[32], layer[96] = "", rest[256];
  size_t ll = 0, rl = 0;
  uint64_t to_fetch = p->bytes_total - p->bytes_cached;
  if (p->event == FPULL_PROGRESS_CACHED)
    put(layer, sizeof layer, &ll, "%.12s cached | ", hex12(p->digest));
  else if (p->event == FPULL_PROGRESS_BLOB_DONE)
    put(layer, sizeof layer, &ll, "%.12s done | ", hex12(p->digest));
  else if (p->event == FPULL_PROGRESS_BYTES)
    put(layer, sizeof layer, &ll, "%.12s %s / %s | ", hex12(p->digest),
        cli_human_bytes(a, sizeof a, p->done), cli_human_bytes(b, sizeof b, p->total));
  put(rest, sizeof rest, &rl, "%u/%u layer%s", p->blobs_done, p->blobs_total,
      p->blobs_total == 1 ? "" : "s");
  if (p->blobs_cached)
    put(rest, sizeof rest, &rl, " (%u cached)", p->blobs_cached);
  /* Bytes resumed from an earlier run are there, but did not arrive now: in the total, not
   * in the speed. */
  uint64_t have = p->bytes_done + p->bytes_resumed;
  put(rest, sizeof rest, &rl, " | %s / %s", cli_human_bytes(a, sizeof a, have),
      cli_human_bytes(b, sizeof b, to_fetch));
  if (p->bytes_resumed)
    put(rest, sizeof rest, &rl, " (%s resumed)", cli_human_bytes(a, sizeof a, p->bytes_resumed));
  double secs = bar.have_byte ? now - bar.first_byte : 0;
  if (secs > 0.05 && p->bytes_done > 0) {
    double rate = (double)p->bytes_done / secs;
    uint64_t left = to_fetch > have ? to_fetch - have : 0;
    put(rest, sizeof rest, &rl, " | %s/s", cli_human_bytes(a, sizeof a, (uint64_t)rate));
    if (left)
      put(rest, sizeof rest, &rl, " | ETA %s", duration(c, sizeof c, (double)left / rate));
  }
  if (bar.unpacking)
    put(rest, sizeof rest, &rl, " | unpacking %d/%u", bar.unpacking, p->blobs_total);
  frame_start();
  char line[352];
  size_t n = 0;
  /* Without room for both, the image's totals win over the layer's part. */
  if ((int)(ll + rl) < (bar.width ? bar.width : 80))
    put(line, sizeof line, &n, "%s", layer);
  put(line, sizeof line, &n, "%s", rest);
  frame_put(line, n);
  bar.on_line = 1;
  bar.last_frame = now;
}

static void on_progress(void *ud, const struct fpull_progress *p)
{
  double now = now_s();
  char a[32], b[32], c[32];
  switch (p->event) {
  case FPULL_PROGRESS_START:
    /* Each image of a prefetch counts from zero, its clock from its own first byte. */
    cli_progress_break();
    memset(&bar, 0, sizeof bar);
    fprintf(stderr, "%s: %u layer%s, %s\n", p->reference, p->blobs_total,
            p->blobs_total == 1 ? "" : "s", cli_human_bytes(a, sizeof a, p->bytes_total));
    break;
  case FPULL_PROGRESS_BYTES: {
    if (!bar.have_byte) {
      bar.have_byte = 1;
      bar.first_byte = now;
    }
    uint64_t step = p->bytes_total ? p->bytes_done * FRAME_STEPS / p->bytes_total : 0;
    if (step != bar.last_step || now - bar.last_frame >= FRAME_INTERVAL) {
      bar.last_step = step;
      draw(p, now);
    }
    break;
  }
  case FPULL_PROGRESS_UNPACK:
    bar.unpacking = (int)p->layer + 1;
    draw(p, now);
    break;
  case FPULL_PROGRESS_FINISH: {
    double secs = bar.have_byte ? now - bar.first_byte : 0;
    /* The parts, the least telling first to go on a narrow terminal: the layer count, then
     * the resumed bytes; the bytes, the time and the speed stay (issue 43.11). */
    char layers[96], down[64], resumed[64] = "", timing[64] = "";
    size_t n = 0;
    put(layers, sizeof layers, &n, "%u layer%s", p->blobs_total, p->blobs_total == 1 ? "" : "s");
    if (p->blobs_cached)
      put(layers, sizeof layers, &n, " (%u cached, %s)", p->blobs_cached,
          cli_human_bytes(a, sizeof a, p->bytes_cached));
    snprintf(down, sizeof down, "%s downloaded", cli_human_bytes(b, sizeof b, p->bytes_done));
    if (p->bytes_resumed)
      snprintf(resumed, sizeof resumed, " (and %s resumed)",
               cli_human_bytes(c, sizeof c, p->bytes_resumed));
    if (p->bytes_done && secs > 0.05)
      snprintf(timing, sizeof timing, " in %s (%s/s)", duration(c, sizeof c, secs),
               cli_human_bytes(a, sizeof a, (uint64_t)((double)p->bytes_done / secs)));
    frame_start();
    int room = (bar.width ? bar.width : 80) - 1;
    char line[256];
    n = 0;
    put(line, sizeof line, &n, "done: %s, %s%s%s", layers, down, resumed, timing);
    if ((int)n > room) {
      n = 0;
      put(line, sizeof line, &n, "done: %s%s%s", down, resumed, timing);
    }
    if ((int)n > room) {
      n = 0;
      put(line, sizeof line, &n, "done: %s%s", down, timing);
    }
    if ((int)n > room) {
      n = 0;
      put(line, sizeof line, &n, "done: %s%s", cli_human_bytes(b, sizeof b, p->bytes_done), timing);
    }
    frame_put(line, n);
    fputc('\n', stderr);
    bar.on_line = 0;
    break;
  }
  default: /* CACHED, BLOB_DONE: always shown */
    draw(p, now);
    break;
  }
  fflush(stderr);
}

/* --progress=lines: for logs and batch jobs (a Slurm job's stderr is a file or a pipe), a
 * whole line at the start, then one at most every LINE_INTERVAL while bytes arrive, and one
 * at the end: no carriage returns, no escape sequences. */
#define LINE_INTERVAL 5.0

static void on_progress_lines(void *ud, const struct fpull_progress *p)
{
  static double start, last;
  double now = now_s();
  char a[32], b[32];
  switch (p->event) {
  case FPULL_PROGRESS_START:
    start = last = now;
    fprintf(stderr, "%s: %u layer%s, %s\n", p->reference, p->blobs_total,
            p->blobs_total == 1 ? "" : "s", cli_human_bytes(a, sizeof a, p->bytes_total));
    break;
  case FPULL_PROGRESS_BYTES:
    if (now - last < LINE_INTERVAL)
      return;
    last = now;
    fprintf(stderr, "%s: %u/%u layers, %s / %s downloaded, %.0fs\n", p->reference, p->blobs_done,
            p->blobs_total, cli_human_bytes(a, sizeof a, p->bytes_done),
            cli_human_bytes(b, sizeof b, p->bytes_total - p->bytes_cached), now - start);
    break;
  case FPULL_PROGRESS_FINISH:
    fprintf(stderr, "%s: done: %u layer%s (%u cached), %s downloaded in %.0fs\n", p->reference,
            p->blobs_total, p->blobs_total == 1 ? "" : "s", p->blobs_cached,
            cli_human_bytes(a, sizeof a, p->bytes_done), now - start);
    break;
  default:
    return;
  }
  fflush(stderr);
}

void cli_progress_attach(struct fpull_pull_opts *o, const struct cli_settings *s)
{
  if (s->quiet || s->progress == 2)
    return;
  if (s->progress == 1)
    o->progress = on_progress_lines;
  /* The bar only on a terminal: scripts and logs get nothing but the result. */
  else if (isatty(STDERR_FILENO)) {
    o->progress = on_progress;
    struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
  }
}
