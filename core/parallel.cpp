// The pool behind core/parallel.hpp (why not OpenMP: there).
#include "core/parallel.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/blas.hpp"
#include "core/tensor.hpp"  // Error

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PELAB_CPU_RELAX() _mm_pause()
#else
#define PELAB_CPU_RELAX() std::this_thread::yield()
#endif

namespace pelab::parallel {

namespace {

thread_local bool t_in_region = false;

// Workers wait for a new generation: spinning first (the next parallel region of a step usually comes
// within microseconds), then asleep on the condition variable so that an idle pool costs nothing.
constexpr auto kSpin = std::chrono::microseconds(200);

class Pool {
 public:
  explicit Pool(int n) : errors_(static_cast<std::size_t>(n)) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { work(static_cast<std::size_t>(i)); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  std::size_t size() const { return workers_.size() + 1; }

  void run(std::size_t n, std::size_t p, std::size_t k, detail::PieceFn fn, void* ctx) {
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    p_ = p;
    k_ = k;
    pending_.store(static_cast<int>(workers_.size()));  // every worker checks in, even one without pieces
    generation_.fetch_add(1);  // seq_cst: pairs with the sleepers_ check in wait_for_job
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(mu_); }
      cv_.notify_all();
    }
    run_worker(0);
    for (unsigned spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 4096)
        PELAB_CPU_RELAX();
      else
        std::this_thread::yield();  // a worker was preempted (a loaded machine): let it run
    }
    for (std::size_t w = 0; w < k; ++w)
      if (errors_[w]) {
        std::exception_ptr e = errors_[w];
        for (auto& x : errors_) x = nullptr;
        std::rethrow_exception(e);
      }
  }

 private:
  // Worker w's contiguous group of the plan's pieces, in order; the first exception stops the group.
  void run_worker(std::size_t w) {
    t_in_region = true;
    try {
      auto piece = [this](std::size_t wk, std::size_t b, std::size_t e) { fn_(ctx_, wk, b, e); };
      detail::run_pieces(n_, p_, chunk_begin(p_, k_, w), chunk_begin(p_, k_, w + 1), w, piece);
    } catch (...) {
      errors_[w] = std::current_exception();
    }
    t_in_region = false;
  }

  // Returns false when the pool stops.
  bool wait_for_job(std::uint64_t& seen) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    for (unsigned i = 0;; ++i) {
      if (generation_.load(std::memory_order_acquire) != seen) break;
      if (stop_.load(std::memory_order_relaxed)) return false;
      PELAB_CPU_RELAX();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);  // seq_cst, then the generation check: no lost wake-up
        cv_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
        break;
      }
    }
    if (stop_.load()) return false;
    seen = generation_.load(std::memory_order_acquire);
    return true;
  }

  void work(std::size_t id) {
    std::uint64_t seen = 0;
    while (wait_for_job(seen)) {
      if (id < k_) run_worker(id);
      // Every worker checks in, so none can lag behind into the next job while its fields are rewritten.
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;  // per worker
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  // The job, published by the generation increment.
  detail::PieceFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t n_ = 0, p_ = 0, k_ = 0;
};

std::unique_ptr<Pool>& pool() {
  static std::unique_ptr<Pool>* p = new std::unique_ptr<Pool>();  // never destroyed: workers may outlive statics
  return *p;
}

}  // namespace

int hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h > 0 ? static_cast<int>(h) : 1;
}

std::string check_threads(long long n, const std::string& what) {
  const int hw = hardware_threads();
  if (n < 1)
    return what + " = " + std::to_string(n) + " is not a thread count; allowed: 1 to " + std::to_string(hw) +
           " (the hardware threads this process may use)";
  if (n > hw)
    return what + " = " + std::to_string(n) + " is more than the " + std::to_string(hw) +
           " hardware threads this process may use; allowed: 1 to " + std::to_string(hw) +
           " (more threads than cores only slow a step down)";
  return "";
}

void set_threads(long long n, const std::string& what) {
  const std::string why = check_threads(n, what);
  if (!why.empty()) throw Error(why);
  if (t_in_region) throw Error("parallel::set_threads called from inside a parallel region");
  blas::set_num_threads(1);  // pelab splits GEMMs over its own pool
  auto& p = pool();
  if (n == threads()) return;
  p.reset();
  if (n > 1) p = std::make_unique<Pool>(static_cast<int>(n));
}

int threads() {
  const auto& p = pool();
  return p ? static_cast<int>(p->size()) : 1;
}

bool in_parallel_region() { return t_in_region; }

std::size_t pieces(std::size_t n, std::size_t grain) {
  if (n == 0) return 0;
  const std::size_t fit = n / (grain ? grain : 1);  // pieces of at least `grain` items
  std::size_t p = 1;
  while (p * 2 <= kMaxPieces && p * 2 <= fit) p *= 2;
  return p;
}

std::size_t workers(std::size_t n, std::size_t grain) {
  const std::size_t p = pieces(n, grain);
  if (p == 0) return 0;
  if (t_in_region) return 1;
  const std::size_t t = static_cast<std::size_t>(threads());
  return p < t ? p : t;
}

namespace detail {
void run(std::size_t n, std::size_t p, std::size_t k, PieceFn fn, void* ctx) { pool()->run(n, p, k, fn, ctx); }
}  // namespace detail

}  // namespace pelab::parallel
