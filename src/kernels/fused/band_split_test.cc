// The chains' band bookkeeping: TwoEndedRows (two threads claiming bands from both ends) and
// BandRows (the expansion rows two consecutive bands share, going down or up an image).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/fused/fused.h"

namespace edgeopt::kernels::fused {
namespace {

// Claims in a random interleaving of the two tasks (one thread: the claim's bookkeeping, not its
// atomics): every row claimed exactly once, bands of one image and at most max_rows rows, task
// 0's in order from row 0, task 1's in reverse order from the last row, and the last bands small
// (the two ends meet within a row or so of an even split when both claim alike).
TEST(TwoEndedRows, ClaimsEveryRowOnceFromBothEnds) {
  std::mt19937 rng(3);
  for (int rows_per_image : {1, 2, 7, 14, 56, 112}) {
    for (int images : {1, 2, 3}) {
      for (int max_rows : {1, 3, 8, 20}) {
        for (int trial = 0; trial < 4; ++trial) {
          const int rows = rows_per_image * images;
          TwoEndedRows split;
          split.Reset(rows);
          std::vector<int> owner(static_cast<size_t>(rows), -1);
          int next_top = 0, next_bottom = rows;
          bool done[2] = {false, false};
          // Trial 0: the tasks take turns; else random turns with task 0 claiming 50 / 85 / 15%.
          const int bias = trial == 1 ? 50 : trial == 2 ? 85 : 15;
          int turn = 0;
          while (!done[0] || !done[1]) {
            int t = trial == 0 ? (turn++ % 2) : static_cast<int>(rng() % 100) < bias ? 0 : 1;
            if (done[t]) t = 1 - t;
            int o0 = -1, o1 = -1;
            if (!split.Claim(t, max_rows, rows_per_image, &o0, &o1)) {
              done[t] = true;
              continue;
            }
            const std::string what = "rows " + std::to_string(rows) + " per image " + std::to_string(rows_per_image) +
                                     " max " + std::to_string(max_rows) + " task " + std::to_string(t) + " band [" +
                                     std::to_string(o0) + ", " + std::to_string(o1) + ")";
            ASSERT_LT(o0, o1) << what;
            ASSERT_LE(o1 - o0, max_rows) << what;
            ASSERT_EQ(o0 / rows_per_image, (o1 - 1) / rows_per_image) << what << ": crosses an image";
            if (t == 0) {
              ASSERT_EQ(o0, next_top) << what;
              next_top = o1;
            } else {
              ASSERT_EQ(o1, next_bottom) << what;
              next_bottom = o0;
            }
            for (int r = o0; r < o1; ++r) {
              ASSERT_EQ(owner[static_cast<size_t>(r)], -1) << what << ": row " << r << " claimed twice";
              owner[static_cast<size_t>(r)] = t;
            }
          }
          for (int r = 0; r < rows; ++r) ASSERT_NE(owner[static_cast<size_t>(r)], -1) << "row " << r << " never claimed";
          if (images == 1 && trial == 0) {
            // Taking turns, the halving near the meeting point keeps the shares within max_rows
            // of each other.
            int mine = 0;
            for (int o : owner) mine += o == 0 ? 1 : 0;
            EXPECT_LE(std::abs(2 * mine - rows), 2 * max_rows) << "rows " << rows << " max " << max_rows;
          }
        }
      }
    }
  }
}

// BandRows going down (Next) and up (Prev) an image: the buffer always holds rows [lo, hi) in
// order, the kept rows moved to their place, and only the others are computed.
TEST(BandRows, KeepsSharedRowsGoingDownAndUp) {
  constexpr int kRows = 40, kRowBytes = 3;
  for (int up = 0; up < 2; ++up) {
    for (int step : {1, 2, 3, 5}) {
      for (int halo : {0, 1, 2}) {
        BandRows e;
        std::vector<uint8_t> buf(static_cast<size_t>(kRows) * kRowBytes, 0xEE);
        int computed = 0;
        for (int k = 0; k * step < kRows; ++k) {
          const int o0 = up ? std::max(0, kRows - (k + 1) * step) : k * step;
          const int o1 = up ? kRows - k * step : std::min(kRows, (k + 1) * step);
          const int lo = std::max(0, o0 - halo), hi = std::min(kRows, o1 + halo);
          const int from = up ? lo : e.Next(0, lo, hi, buf.data(), kRowBytes);
          const int to = up ? e.Prev(0, lo, hi, buf.data(), kRowBytes) : hi;
          ASSERT_LE(from, to);
          for (int r = from; r < to; ++r) {
            std::memset(buf.data() + static_cast<size_t>(r - lo) * kRowBytes, r, kRowBytes);
            ++computed;
          }
          for (int r = lo; r < hi; ++r)
            for (int i = 0; i < kRowBytes; ++i)
              ASSERT_EQ(buf[static_cast<size_t>(r - lo) * kRowBytes + i], r)
                  << (up ? "up" : "down") << " step " << step << " halo " << halo << " band " << k << " row " << r;
        }
        // Each input row computed once (the bands' rows overlap by the halo only).
        EXPECT_EQ(computed, kRows) << (up ? "up" : "down") << " step " << step << " halo " << halo;
      }
    }
  }
  // Another image: nothing kept.
  BandRows e;
  std::vector<uint8_t> buf(30);
  EXPECT_EQ(e.Prev(0, 5, 10, buf.data(), 3), 10);
  EXPECT_EQ(e.Prev(0, 2, 7, buf.data(), 3), 5);
  EXPECT_EQ(e.Prev(1, 2, 7, buf.data(), 3), 7);
}

}  // namespace
}  // namespace edgeopt::kernels::fused
