// cpp-epoll-libpq: source 004's C++ server (Apostol) as its text describes it — a master process
// and WORKERS worker processes, each one epoll event loop in which HTTP/1.1 connections and
// PostgreSQL connections (libpq, asynchronous) live side by side. No thread pool, no coroutines.
//
// It serves what source 004 benchmarked: GET /ping, /time, /db/ping, /db/time, plus the contract's
// /health and /metrics (contract/API.md). Every setting that matters for fairness comes from the
// stand's environment (HTTP_PORT, DB_*, DB_POOL_SIZE, WORKERS) or is a named constant below.
//
// Pool: each worker keeps its own pool of ceil(DB_POOL_SIZE / WORKERS) connections, opens
// min(5, that) at start (the source: min 5, max 15 per worker) and grows on demand. Queries go
// out with PQsendQueryParams and no parameters: an unnamed statement that nothing reuses, so it
// works behind PgBouncer's transaction pooling, as the source says Apostol's libpq queries did.
// HTTP/1.1 is parsed by nodejs/http-parser (Debian's libhttp-parser). A request waits at most
// kQueueTimeoutMs for a connection, then gets 503 (the other stacks bound DB work at 5 s).

#include <http_parser.h>
#include <libpq-fe.h>

#include <algorithm>
#include <arpa/inet.h>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <errno.h>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <string_view>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kMinOpenPerWorker = 5;        // source 004: pool min 5 per worker
constexpr long kQueueTimeoutMs = 5000;      // wait for a pooled connection, then 503
constexpr uint64_t kMaxBody = 64 * 1024;    // the contract's body limit (413 beyond)
constexpr long kReconnectMs = 1000;         // a failed DB connection is retried after this

const char* kSqlPing = "SELECT json_build_object('ok', true, 'message', 'OK')::text";
const char* kSqlTime =
    "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text";

volatile sig_atomic_t g_stop = 0;

long now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

std::string env(const char* k, const char* dflt) {
  const char* v = getenv(k);
  return v && *v ? v : dflt;
}

int env_int(const char* k, int dflt, int lo, int hi) {
  std::string v = env(k, "");
  if (v.empty()) return dflt;
  char* end = nullptr;
  long n = strtol(v.c_str(), &end, 10);
  if (*end || n < lo || n > hi) {
    fprintf(stderr, "%s=%s: want an integer in %d..%d\n", k, v.c_str(), lo, hi);
    exit(2);
  }
  return static_cast<int>(n);
}

// Keys in the epoll data: HTTP connections by fd, DB connections tagged in the high bit.
constexpr uint64_t kDbTag = 1ULL << 63;
constexpr uint64_t kListenKey = ~0ULL >> 1;

enum class Kind {
  Ping, Time, DbPing, DbTime, Health, Metrics, NotFound, BadMethod, BadRequest, TooLarge
};

// One parsed request, waiting for its turn on its connection.
struct Req {
  Kind kind;
  bool keep_alive;
};

struct Client {
  int fd;
  uint64_t gen;            // distinguishes a reused fd from the one a query was sent for
  http_parser parser;      // nodejs/http-parser (Debian's libhttp-parser), one per connection
  std::string url;         // the request target being parsed
  std::deque<Req> pending; // parsed, not yet answered (pipelining keeps them in order)
  std::string out;
  bool busy = false;       // a request of this connection is waiting on the database
  bool close_after = false;
  bool want_out = false;   // EPOLLOUT registered
};

struct Waiting {
  int fd;
  uint64_t gen;
  Kind kind;
  bool keep_alive;
  long since;
};

struct DbConn {
  PGconn* pg = nullptr;
  bool ready = false;       // connected and idle or busy
  bool busy = false;
  bool connecting = false;
  long retry_at = 0;
  Waiting req{};            // the request the running query answers
  std::string result;
  bool failed = false;
  int fd = -1;
};

class Worker {
 public:
  Worker(int listen_fd, std::string conninfo, int pool_max)
      : listen_fd_(listen_fd), conninfo_(std::move(conninfo)), db_(pool_max) {}

  int run();

 private:
  void accept_all();
  void on_client(int fd, uint32_t ev);
  void process(Client& c);
  void respond(Client& c, int status, std::string_view ctype, std::string_view body,
               bool keep_alive);
  void flush(Client& c);
  void close_client(int fd);
  void after_answer(Client& c);
  void dispatch(Client& c, Kind k, bool keep_alive);
  void db_start(size_t i);
  void db_event(size_t i, uint32_t ev);
  void db_send(size_t i, const Waiting& w);
  void db_finish(size_t i);
  void db_fail(size_t i);
  void pump_queue();
  void sweep(long now);
  void watch_db(size_t i, uint32_t events, bool add);
  size_t open_db() const;
  std::string metrics() const;

  int ep_ = -1;
  int listen_fd_;
  std::string conninfo_;
  std::vector<DbConn> db_;
  std::unordered_map<int, std::unique_ptr<Client>> clients_;
  std::deque<Waiting> queue_;
  uint64_t next_gen_ = 1;
  uint64_t served_ = 0, db_errors_ = 0, timeouts_ = 0;
};

const char* reason(int s) {
  switch (s) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
  }
}

Kind route(const std::string& url, unsigned method) {
  std::string path = url.substr(0, url.find('?'));
  Kind k = path == "/ping"      ? Kind::Ping
           : path == "/time"    ? Kind::Time
           : path == "/db/ping" ? Kind::DbPing
           : path == "/db/time" ? Kind::DbTime
           : path == "/health"  ? Kind::Health
           : path == "/metrics" ? Kind::Metrics
                                : Kind::NotFound;
  if (k != Kind::NotFound && method != HTTP_GET) k = Kind::BadMethod;
  return k;
}

int on_message_begin(http_parser* p) {
  static_cast<Client*>(p->data)->url.clear();
  return 0;
}

int on_url(http_parser* p, const char* at, size_t len) {
  static_cast<Client*>(p->data)->url.append(at, len);
  return 0;
}

int on_headers_complete(http_parser* p) {
  // no endpoint here takes a body; one over the contract's limit stops the parser (→ 413)
  if (p->content_length != ULLONG_MAX && p->content_length > kMaxBody) return 3;
  return 0;
}

int on_message_complete(http_parser* p) {
  auto* c = static_cast<Client*>(p->data);
  c->pending.push_back(Req{route(c->url, p->method), http_should_keep_alive(p) != 0});
  return 0;
}

http_parser_settings parser_settings() {
  http_parser_settings s;
  http_parser_settings_init(&s);
  s.on_message_begin = on_message_begin;
  s.on_url = on_url;
  s.on_headers_complete = on_headers_complete;
  s.on_message_complete = on_message_complete;
  return s;
}

const http_parser_settings kParser = parser_settings();

void Worker::watch_db(size_t i, uint32_t events, bool add) {
  epoll_event e{};
  e.events = events;
  e.data.u64 = kDbTag | i;
  epoll_ctl(ep_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, db_[i].fd, &e);
}

size_t Worker::open_db() const {
  size_t n = 0;
  for (auto& d : db_) n += (d.pg != nullptr);
  return n;
}

void Worker::db_start(size_t i) {
  DbConn& d = db_[i];
  d.pg = PQconnectStart(conninfo_.c_str());
  if (!d.pg || PQstatus(d.pg) == CONNECTION_BAD) {
    fprintf(stderr, "db: cannot start a connection: %s\n", d.pg ? PQerrorMessage(d.pg) : "oom");
    db_fail(i);
    return;
  }
  d.connecting = true;
  d.fd = PQsocket(d.pg);
  watch_db(i, EPOLLOUT, true);
}

void Worker::db_fail(size_t i) {
  DbConn& d = db_[i];
  if (d.busy) {
    db_errors_++;
    auto it = clients_.find(d.req.fd);
    if (it != clients_.end() && it->second->gen == d.req.gen) {
      Client& c = *it->second;
      c.busy = false;
      respond(c, 503, "application/json",
              R"({"error":"unavailable","message":"the database connection failed"})", d.req.keep_alive);
      after_answer(c);
    }
  }
  if (d.fd >= 0) epoll_ctl(ep_, EPOLL_CTL_DEL, d.fd, nullptr);
  if (d.pg) PQfinish(d.pg);
  d = DbConn{};
  d.retry_at = now_ms() + kReconnectMs;
}

void Worker::db_event(size_t i, uint32_t ev) {
  DbConn& d = db_[i];
  if (!d.pg) return;
  if (d.connecting) {
    PostgresPollingStatusType st = PQconnectPoll(d.pg);
    int fd = PQsocket(d.pg);
    if (fd != d.fd) {  // libpq may switch sockets while connecting (several hosts)
      epoll_ctl(ep_, EPOLL_CTL_DEL, d.fd, nullptr);
      d.fd = fd;
      watch_db(i, EPOLLIN, true);
    }
    switch (st) {
      case PGRES_POLLING_READING: watch_db(i, EPOLLIN, false); return;
      case PGRES_POLLING_WRITING: watch_db(i, EPOLLOUT, false); return;
      case PGRES_POLLING_OK:
        d.connecting = false;
        d.ready = true;
        PQsetnonblocking(d.pg, 1);
        watch_db(i, EPOLLIN, false);
        pump_queue();
        return;
      default:
        fprintf(stderr, "db: connect failed: %s", PQerrorMessage(d.pg));
        db_fail(i);
        return;
    }
  }
  if (ev & EPOLLOUT) {
    int f = PQflush(d.pg);
    if (f < 0) return db_fail(i);
    if (f == 0) watch_db(i, EPOLLIN, false);
  }
  if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
    if (!PQconsumeInput(d.pg)) return db_fail(i);
    while (d.busy && !PQisBusy(d.pg)) {
      PGresult* r = PQgetResult(d.pg);
      if (!r) {
        db_finish(i);
        break;
      }
      if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 1) {
        d.result.assign(PQgetvalue(r, 0, 0), PQgetlength(r, 0, 0));
      } else {
        d.failed = true;
        fprintf(stderr, "db: query failed: %s", PQresultErrorMessage(r));
      }
      PQclear(r);
    }
    if (!d.busy && PQstatus(d.pg) == CONNECTION_BAD) db_fail(i);
  }
}

void Worker::db_send(size_t i, const Waiting& w) {
  DbConn& d = db_[i];
  const char* sql = w.kind == Kind::DbPing ? kSqlPing : kSqlTime;
  d.busy = true;
  d.req = w;
  d.result.clear();
  d.failed = false;
  // extended protocol, unnamed statement, no parameters, text result: nothing outlives the
  // query, so PgBouncer's transaction pooling is safe
  if (!PQsendQueryParams(d.pg, sql, 0, nullptr, nullptr, nullptr, nullptr, 0)) return db_fail(i);
  int f = PQflush(d.pg);
  if (f < 0) return db_fail(i);
  watch_db(i, f == 1 ? (EPOLLIN | EPOLLOUT) : EPOLLIN, false);
}

void Worker::db_finish(size_t i) {
  DbConn& d = db_[i];
  d.busy = false;
  served_++;
  auto it = clients_.find(d.req.fd);
  if (it != clients_.end() && it->second->gen == d.req.gen) {
    Client& c = *it->second;
    c.busy = false;
    if (d.failed) {
      db_errors_++;
      respond(c, 503, "application/json",
              R"({"error":"unavailable","message":"the database query failed"})", d.req.keep_alive);
    } else {
      // the query's text, verbatim (contract: /db/ping and /db/time)
      respond(c, 200, "application/json", d.result, d.req.keep_alive);
    }
    after_answer(c);
  }
  pump_queue();
}

void Worker::pump_queue() {
  while (!queue_.empty()) {
    size_t idle = db_.size();
    for (size_t i = 0; i < db_.size(); i++)
      if (db_[i].ready && !db_[i].busy) { idle = i; break; }
    if (idle == db_.size()) {
      // grow the pool by one connection per waiting request, up to its maximum
      size_t connecting = 0;
      for (auto& d : db_) connecting += d.connecting;
      for (size_t i = 0; i < db_.size() && connecting < queue_.size(); i++)
        if (!db_[i].pg && db_[i].retry_at <= now_ms()) { db_start(i); connecting++; }
      return;
    }
    Waiting w = queue_.front();
    queue_.pop_front();
    auto it = clients_.find(w.fd);
    if (it == clients_.end() || it->second->gen != w.gen) continue;  // the client went away
    db_send(idle, w);
  }
}

void Worker::sweep(long now) {
  while (!queue_.empty() && now - queue_.front().since > kQueueTimeoutMs) {
    Waiting w = queue_.front();
    queue_.pop_front();
    timeouts_++;
    auto it = clients_.find(w.fd);
    if (it == clients_.end() || it->second->gen != w.gen) continue;
    Client& c = *it->second;
    c.busy = false;
    respond(c, 503, "application/json",
            R"({"error":"timeout","message":"no database connection within 5 s"})", w.keep_alive);
    after_answer(c);
  }
  // keep the pool's minimum open, retrying failed connections
  size_t want = std::min<size_t>(kMinOpenPerWorker, db_.size());
  for (size_t i = 0; i < db_.size() && open_db() < want; i++)
    if (!db_[i].pg && db_[i].retry_at <= now) db_start(i);
}

std::string Worker::metrics() const {
  // process_* as the Prometheus client libraries name them, for this worker process
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  double cpu = 0;
  long rss_pages = 0;
  if (FILE* f = fopen("/proc/self/stat", "r")) {
    unsigned long ut = 0, st = 0;
    // fields 14 and 15 (utime, stime) after the parenthesised command name
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    if (const char* p = strrchr(buf, ')'))
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    cpu = static_cast<double>(ut + st) / ticks;
    fclose(f);
  }
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    long size = 0;
    if (fscanf(f, "%ld %ld", &size, &rss_pages) != 2) rss_pages = 0;
    fclose(f);
  }
  size_t ready = 0, busy = 0;
  for (auto& d : db_) { ready += d.ready; busy += d.busy; }
  char out[2048];
  snprintf(out, sizeof out,
           "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
           "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
           "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
           "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n"
           "# HELP db_pool_max Connections this worker's pool may open.\n"
           "# TYPE db_pool_max gauge\ndb_pool_max %zu\n"
           "# HELP db_pool_open Connections open in this worker's pool.\n"
           "# TYPE db_pool_open gauge\ndb_pool_open %zu\n"
           "# HELP db_pool_in_use Connections running a query.\n"
           "# TYPE db_pool_in_use gauge\ndb_pool_in_use %zu\n"
           "# HELP db_pool_waiting Requests waiting for a connection.\n"
           "# TYPE db_pool_waiting gauge\ndb_pool_waiting %zu\n"
           "# HELP db_queries_total Queries answered.\n"
           "# TYPE db_queries_total counter\ndb_queries_total %llu\n"
           "# HELP db_errors_total Queries that failed.\n"
           "# TYPE db_errors_total counter\ndb_errors_total %llu\n"
           "# HELP db_wait_timeouts_total Requests that waited longer than 5 s for a connection.\n"
           "# TYPE db_wait_timeouts_total counter\ndb_wait_timeouts_total %llu\n",
           cpu, rss_pages * page, db_.size(), ready, busy, queue_.size(),
           static_cast<unsigned long long>(served_), static_cast<unsigned long long>(db_errors_),
           static_cast<unsigned long long>(timeouts_));
  return out;
}

void Worker::respond(Client& c, int status, std::string_view ctype, std::string_view body,
                     bool keep_alive) {
  char head[256];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %.*s\r\nContent-Length: %zu\r\n%s\r\n",
                   status, reason(status), static_cast<int>(ctype.size()), ctype.data(),
                   body.size(), keep_alive ? "" : "Connection: close\r\n");
  c.out.append(head, n);
  c.out.append(body);
  if (!keep_alive) c.close_after = true;
  flush(c);
}

void Worker::flush(Client& c) {
  while (!c.out.empty()) {
    ssize_t w = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (w > 0) {
      c.out.erase(0, static_cast<size_t>(w));
      continue;
    }
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.want_out) {
        epoll_event e{};
        e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
        e.data.u64 = static_cast<uint64_t>(c.fd);
        epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &e);
        c.want_out = true;
      }
      return;
    }
    c.close_after = true;  // the peer is gone
    c.out.clear();
    break;
  }
  if (c.want_out) {
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.u64 = static_cast<uint64_t>(c.fd);
    epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &e);
    c.want_out = false;
  }
  // closed by the caller's loop (close_after and nothing left to write)
}

void Worker::dispatch(Client& c, Kind k, bool keep_alive) {
  static const std::string_view kJson = "application/json";
  switch (k) {
    case Kind::Ping:
      return respond(c, 200, kJson, R"({"ok":true,"message":"OK"})", keep_alive);
    case Kind::Time: {
      char b[64];
      int n = snprintf(b, sizeof b, R"({"serverTime":%ld})", static_cast<long>(time(nullptr)));
      return respond(c, 200, kJson, std::string_view(b, n), keep_alive);
    }
    case Kind::Health: {
      bool up = false;
      for (auto& d : db_) up = up || d.ready;
      return up ? respond(c, 200, kJson, R"({"status":"UP"})", keep_alive)
                : respond(c, 503, kJson, R"({"status":"DOWN"})", keep_alive);
    }
    case Kind::Metrics:
      return respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", metrics(), keep_alive);
    case Kind::NotFound:
      return respond(c, 404, kJson, R"({"error":"not_found","message":"no such path"})",
                     keep_alive);
    case Kind::BadMethod:
      return respond(c, 405, kJson,
                     R"({"error":"bad_request","message":"only GET is served here"})", keep_alive);
    case Kind::BadRequest:
      return respond(c, 400, kJson, R"({"error":"bad_request","message":"malformed request"})",
                     false);
    case Kind::TooLarge:
      return respond(c, 413, kJson,
                     R"({"error":"payload_too_large","message":"body over 64 KiB"})", false);
    case Kind::DbPing:
    case Kind::DbTime:
      c.busy = true;
      queue_.push_back(Waiting{c.fd, c.gen, k, keep_alive, now_ms()});
      return pump_queue();
  }
}

// Answers the parsed requests of c one at a time: a request waiting on the database holds the
// ones pipelined behind it, so responses leave in order.
void Worker::process(Client& c) {
  while (!c.busy && !c.close_after && !c.pending.empty()) {
    Req r = c.pending.front();
    c.pending.pop_front();
    dispatch(c, r.kind, r.keep_alive);
  }
}

// After an answer that did not come from reading the socket (the database, a timeout): go on
// with the requests pipelined behind it, and close when the answer said so.
void Worker::after_answer(Client& c) {
  process(c);
  if (c.close_after && c.out.empty() && !c.busy) close_client(c.fd);
}

void Worker::close_client(int fd) {
  epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  clients_.erase(fd);  // queued requests of this fd are dropped by the generation check
}

void Worker::on_client(int fd, uint32_t ev) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  if (ev & EPOLLOUT) flush(c);
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    char buf[16384];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        if (HTTP_PARSER_ERRNO(&c.parser) != HPE_OK) continue;  // already answered with an error
        size_t used = http_parser_execute(&c.parser, &kParser, buf, static_cast<size_t>(n));
        if (HTTP_PARSER_ERRNO(&c.parser) != HPE_OK || used != static_cast<size_t>(n)) {
          bool large = HTTP_PARSER_ERRNO(&c.parser) == HPE_CB_headers_complete;
          c.pending.push_back(Req{large ? Kind::TooLarge : Kind::BadRequest, false});
        }
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        // the peer closed (or reset): nobody is left to read answers. A query in flight for it
        // finishes on its DB connection and is dropped by the generation check.
        return close_client(fd);
      }
      break;
    }
    process(c);
  }
  if (c.close_after && c.out.empty() && !c.busy) close_client(fd);
}

void Worker::accept_all() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: another worker took it, or none left
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Client>();
    c->fd = fd;
    c->gen = next_gen_++;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c.get();
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &e);
    clients_[fd] = std::move(c);
  }
}

int Worker::run() {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN | EPOLLEXCLUSIVE;  // one worker woken per connection
  e.data.u64 = kListenKey;
  epoll_ctl(ep_, EPOLL_CTL_ADD, listen_fd_, &e);
  sweep(now_ms());  // open the pool's minimum now
  std::vector<epoll_event> evs(512);
  while (!g_stop) {
    int n = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), 100);
    if (n < 0 && errno != EINTR) {
      perror("epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      uint64_t k = evs[i].data.u64;
      if (k == kListenKey) accept_all();
      else if (k & kDbTag) db_event(static_cast<size_t>(k & ~kDbTag), evs[i].events);
      else on_client(static_cast<int>(k), evs[i].events);
    }
    sweep(now_ms());
  }
  for (auto& d : db_)
    if (d.pg) PQfinish(d.pg);
  return 0;
}

std::string conninfo() {
  // libpq keyword/value string; values quoted so spaces or quotes in a password survive
  auto q = [](const std::string& v) {
    std::string o = "'";
    for (char ch : v) {
      if (ch == '\'' || ch == '\\') o += '\\';
      o += ch;
    }
    return o + "'";
  };
  return "host=" + q(env("DB_HOST", "127.0.0.1")) + " port=" + q(env("DB_PORT", "5432")) +
         " dbname=" + q(env("DB_NAME", "bench")) + " user=" + q(env("DB_USER", "bench")) +
         " password=" + q(env("DB_PASSWORD", "")) +
         " application_name='cpp-epoll-libpq' connect_timeout=5";
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int port = env_int("HTTP_PORT", 8080, 1, 65535);
  int pool = env_int("DB_POOL_SIZE", 60, 1, 10000);
  int workers = env_int("WORKERS", 2, 1, 256);
  int per_worker = (pool + workers - 1) / workers;

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || listen(lfd, 4096) < 0) {
    perror("listen");
    return 1;
  }
  printf("listening on 127.0.0.1:%d, %d workers, pool %d each (DB_POOL_SIZE %d)\n", port, workers,
         per_worker, pool);

  struct sigaction sa{};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<pid_t> kids;
  for (int w = 0; w < workers; w++) {
    pid_t pid = fork();
    if (pid == 0) {
      Worker worker(lfd, conninfo(), per_worker);
      return worker.run();
    }
    if (pid < 0) {
      perror("fork");
      g_stop = 1;
      break;
    }
    kids.push_back(pid);
  }
  // master: wait for a signal or a worker's exit; then stop every worker and wait for them
  int status = 0, code = 0;
  while (!g_stop) {
    pid_t p = waitpid(-1, &status, 0);
    if (p > 0) {
      fprintf(stderr, "worker %d exited (status %d): stopping\n", p, status);
      code = 1;
      for (auto& k : kids)
        if (k == p) k = 0;
      break;
    }
    if (p < 0 && errno != EINTR) break;
  }
  for (pid_t k : kids)
    if (k > 0) kill(k, SIGTERM);
  while (waitpid(-1, &status, 0) > 0 || errno == EINTR) {
  }
  return code;
}
