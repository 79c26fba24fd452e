// Learning-rate schedules at their key steps: warmup, the warmup boundary, mid-decay, the end, beyond.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/tensor.hpp"
#include "training/schedule.hpp"

using namespace pelab;

namespace {
ScheduleConfig make(const std::string& kind, std::size_t warmup = 2, std::size_t total = 5) {
  ScheduleConfig c;
  c.kind = kind;
  c.peak = 1e-2;
  c.min_lr = 1e-3;
  c.warmup = warmup;
  c.total = total;
  return c;
}
const double kPi = std::acos(-1.0);
}  // namespace

TEST_CASE("warmup is linear from peak over warmup to peak for every kind") {
  for (const std::string kind : {"constant", "cosine", "linear"}) {
    INFO(kind);
    const auto c = make(kind, 4, 20);
    CHECK(lr_at(c, 0) == Approx(0.25e-2).epsilon(1e-15));
    CHECK(lr_at(c, 1) == Approx(0.50e-2).epsilon(1e-15));
    CHECK(lr_at(c, 3) == Approx(1e-2).epsilon(1e-15));  // the last warmup step reaches peak
    CHECK(lr_at(c, 4) == Approx(1e-2).epsilon(1e-15));  // decay starts at peak (p = 0)
  }
}

TEST_CASE("cosine decays from peak to min_lr and stays there") {
  const auto c = make("cosine");  // the PyTorch fixtures' schedule
  const double want[] = {5e-3, 1e-2, 1e-2, 1e-3 + 0.5 * 9e-3 * (1 + std::cos(kPi / 3)),
                         1e-3 + 0.5 * 9e-3 * (1 + std::cos(2 * kPi / 3)), 1e-3};
  for (std::size_t s = 0; s < 6; ++s) {
    INFO("step " << s);
    CHECK(lr_at(c, s) == Approx(want[s]).epsilon(1e-14));
  }
  CHECK(lr_at(c, 3) == Approx(7.75e-3).epsilon(1e-14));
  CHECK(lr_at(c, 1000) == Approx(1e-3).epsilon(1e-15));  // min floor after total
}

TEST_CASE("linear decays from peak to min_lr and stays there") {
  const auto c = make("linear");
  CHECK(lr_at(c, 2) == Approx(1e-2).epsilon(1e-15));
  CHECK(lr_at(c, 3) == Approx(1e-2 - 9e-3 / 3).epsilon(1e-14));
  CHECK(lr_at(c, 4) == Approx(1e-2 - 2 * 9e-3 / 3).epsilon(1e-14));
  CHECK(lr_at(c, 5) == Approx(1e-3).epsilon(1e-15));
  CHECK(lr_at(c, 99) == Approx(1e-3).epsilon(1e-15));
}

TEST_CASE("constant holds peak after warmup") {
  const auto c = make("constant");
  CHECK(lr_at(c, 2) == 1e-2);
  CHECK(lr_at(c, 5) == 1e-2);
  CHECK(lr_at(c, 500) == 1e-2);
}

TEST_CASE("schedules without warmup or with total not beyond warmup stay defined") {
  auto c = make("cosine", 0, 10);
  CHECK(lr_at(c, 0) == Approx(1e-2).epsilon(1e-15));
  CHECK(lr_at(c, 5) == Approx(1e-3 + 0.5 * 9e-3).epsilon(1e-14));
  CHECK(lr_at(c, 10) == Approx(1e-3).epsilon(1e-15));
  c = make("linear", 3, 2);  // total < warmup: decay is immediate after warmup
  CHECK(lr_at(c, 2) == Approx(1e-2).epsilon(1e-15));
  CHECK(lr_at(c, 3) == Approx(1e-2).epsilon(1e-15));
  CHECK(lr_at(c, 4) == Approx(1e-3).epsilon(1e-15));
  for (std::size_t s = 0; s < 10; ++s) CHECK(std::isfinite(lr_at(c, s)));
}

TEST_CASE("unknown schedule kinds and bad rates throw naming what is allowed") {
  auto c = make("cosin");
  try {
    lr_at(c, 0);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("'cosin'") != std::string::npos);
    CHECK(msg.find("constant, cosine, linear") != std::string::npos);
  }
  CHECK_THROWS_AS(validate(c), Error);
  c = make("cosine");
  CHECK_NOTHROW(validate(c));
  c.peak = -1;
  CHECK_THROWS_AS(validate(c), Error);
  c = make("cosine");
  c.min_lr = std::nan("");
  CHECK_THROWS_AS(validate(c), Error);
}
