// The least time a candidate's timed block can have taken, by kforge's own clock.
//
// The times a candidate's worker reports are claims: its timer runs in the candidate's process. For
// a block of n repetitions kforge knows W, its own clock from sending `time` to reading the reply, and
// D, the machine's round-trip delay (no-op requests to the trusted reference). The block's reported
// repetition times R plus the work it says it did between them (U, swapping inputs and keeping
// outputs) must account for all but 10% of W - D and a fixed allowance for the request itself:
//
//   R + min(U, Umax) >= 0.9 (W - D) - (kRequestAllowanceMs + kRoundTripAllowance D)     (the floor)
//
// where Umax is what the trusted reference measured the same untimed work to take (copying a set
// into the buffers, copying the outputs aside, comparing the inputs), times kUntimedFactor, per
// repetition, plus kUntimedAllowanceMs. The allowance is what an honest worker's request costs beside
// its repetitions (parsing, the watch's checks, the reply): 4.5 ms measured on a 2-core machine under
// a load of 10, and more the busier the machine, which D tracks.
//
// Two verdicts rest on it. A candidate whose every kept block is below the floor (kMinBlocksToReject
// of them at least) gets a warning: an honest GPU kernel whose untimed work is large (KernelBench
// 47_Sum, an 8.6 GB input on an H200) fell 7.5% below a stricter floor tried before (W - D less the
// allowance and a tenth of R) in every block; the rejection floor below leaves it 6 ms and more of
// margin (45.4 ms explained, 39 ms at most). A candidate is rejected
// (`timing_crosscheck`) only when most of its judged blocks are far below it, below the rejection
// floor
//
//   R + min(U, Umax) >= (1 - kRejectShare) (W - D) - (kRequestAllowanceMs + kRoundTripAllowance D)
//
// that is, when more than kRejectShare of the block on kforge's clock and the allowance are
// unaccounted for: a timer that reports half of what it measured, or less, on blocks long enough. A
// block whose rejection floor is not above 0 cannot be judged so (too short: its allowance exceeds
// what it could hide); a majority of the judged ones decides, kMinBlocksToReject of them at least,
// so one block stalled by a load neither rejects an honest candidate nor excuses a forged one.
// Block times are kept as reported either way (the cached-results rule compares them with each
// other).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kforge {

inline constexpr double kUnexplainedShare = 0.1;     // of the block on kforge's clock: the floor (a warning)
inline constexpr double kRejectShare = 0.25;         // of the block on kforge's clock: the rejection floor
inline constexpr double kRequestAllowanceMs = 5.0;   // per block: the request, the reply, the watch's checks
inline constexpr double kRoundTripAllowance = 2.0;   // times D, beside it: a busy machine slows the request too
inline constexpr int kMinBlocksToReject = 3;
inline constexpr double kUntimedFactor = 3.0;        // times the trusted measure of the untimed work
inline constexpr double kUntimedAllowanceMs = 1.0;   // per block, beside it

struct ClockFloor {
  double floor_ms = 0;      // the least R + U' the block can honestly report
  double explained_ms = 0;  // R + U' as reported, U' the untimed time kforge believes
  double reject_floor_ms = 0;  // below this the block is far below its floor
  bool below() const { return explained_ms < floor_ms; }
  bool judged() const { return reject_floor_ms > 0; }  // long enough to be found far below
  bool far_below() const { return judged() && explained_ms < reject_floor_ms; }
};

// `untimed_per_rep_ms`: the trusted measure of the untimed work of one repetition; negative when
// unknown (lean timing), and then the candidate's own figure is believed.
ClockFloor clock_floor(double reported_sum_ms, double untimed_ms, double wall_ms, double round_trip_ms, int reps,
                       double untimed_per_rep_ms);

// Why the candidate's timing is rejected: more than half of its judged blocks far below their floor,
// kMinBlocksToReject of them at least; nullopt otherwise.
std::optional<std::string> reject_verdict(const std::vector<ClockFloor>& floors);

// Why the candidate's timing is warned of when every one of its kept blocks (`floors`, at least
// kMinBlocksToReject) was below its floor; nullopt when one agreed with kforge's clock, or too few ran.
std::optional<std::string> floor_verdict(const std::vector<ClockFloor>& floors);

}  // namespace kforge
