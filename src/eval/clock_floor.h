// The least time a candidate's timed block can have taken, by kforge's own clock.
//
// The times a candidate's worker reports are claims: its timer runs in the candidate's process. For
// a block of n repetitions kforge knows W, its own clock from sending `time` to reading the reply, and
// D, the machine's round-trip delay (no-op requests to the trusted reference). The block's reported
// repetition times R plus the work it says it did between them (U, swapping inputs and keeping
// outputs) must account for W - D, all but a fixed allowance for the request itself and a tenth of R:
//
//   R + min(U, Umax) >= (W - D) - (kRequestAllowanceMs + kRoundTripAllowance D) - kClaimShare R
//
// so a timer can under-report by at most the allowance plus 10% of what it claims. Umax is what the
// trusted reference measured the same untimed work to take (the set copied into the buffers, the
// outputs copied aside, the inputs compared), per repetition, in the same round (so a load that came
// after the timing was prepared raises it too), times kUntimedFactor, plus kUntimedAllowanceMs.
//
// The allowance is what an honest worker's request costs beside its repetitions (parsing, the
// watch's checks, the reply): 4.7 ms at most on a 2-core machine under two busy loops, and more the
// busier the machine, which D tracks. It is at most kClaimShare of a block whose repetitions claim
// kJudgedBlockMs: the candidate's blocks are lengthened to that (judged_block_reps). A block below its
// floor is recorded (its times are kept as reported: the cached-results rule compares them with each
// other); a candidate whose every judged block (W - D of kJudgedBlockMs at least) is below its floor,
// kMinBlocksToReject of them at least, is rejected (`timing_crosscheck`): a stall catches some blocks
// of an honest candidate, a forged timer all of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

inline constexpr double kClaimShare = 0.1;           // of the reported repetition times
inline constexpr double kRequestAllowanceMs = 5.0;   // per block: the request, the reply, the watch's checks
inline constexpr double kRoundTripAllowance = 2.0;   // times D, beside it: a busy machine slows the request too
inline constexpr int kMinBlocksToReject = 3;
inline constexpr double kUntimedFactor = 3.0;        // times the trusted measure of the untimed work
inline constexpr double kUntimedAllowanceMs = 1.0;   // per block, beside it
// A block whose repetitions claim this long has an allowance of at most kClaimShare of its claim.
inline constexpr double kJudgedBlockMs = kRequestAllowanceMs / kClaimShare;
// Lengthening stops here: every repetition's outputs are kept until the block's checked ones are
// picked, so a block holds at most this many, and at most kKeptBytesBudget of them.
inline constexpr int kMaxBlockReps = 64;
inline constexpr std::uint64_t kKeptBytesBudget = 256ull << 20;

struct ClockFloor {
  double floor_ms = 0;      // the least R + U' the block can honestly report
  double explained_ms = 0;  // R + U' as reported, U' the untimed time kforge believes
  double judged_ms = 0;     // W - D: the block's length on kforge's clock
  bool below() const { return explained_ms < floor_ms; }
  bool judged() const { return judged_ms >= kJudgedBlockMs; }
};

// `untimed_per_rep_ms`: the trusted measure of the untimed work of one repetition; negative when
// unknown (lean timing), and then the candidate's own figure is believed.
ClockFloor clock_floor(double reported_sum_ms, double untimed_ms, double wall_ms, double round_trip_ms, int reps,
                       double untimed_per_rep_ms);

// The repetitions a candidate block needs for its claims to reach kJudgedBlockMs, when one
// repetition claims `claimed_rep_ms`: at least `planned`, at most kMaxBlockReps and what
// kKeptBytesBudget holds of `output_bytes` per repetition (0: unknown, not bounded by it).
int judged_block_reps(double claimed_rep_ms, int planned, std::uint64_t output_bytes);

// Why the candidate's timing is rejected when every one of its judged blocks (`floors`, at least
// kMinBlocksToReject) was below its floor; nullopt when one agreed with kforge's clock, or too few ran.
std::optional<std::string> floor_verdict(const std::vector<ClockFloor>& floors);

}  // namespace kforge
