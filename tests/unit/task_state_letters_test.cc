// The task_states iterator sends raw task->__state and exit_state words; these must become
// the letter /proc/<tid>/stat prints for the same task (include/linux/sched.h values).
#include "gtest/gtest.h"
#include "signals/memory/task_states_probe.h"

namespace stagewatch {
namespace {

TEST(TaskStateLettersTest, EachReportedStateGivesItsProcLetter) {
  EXPECT_EQ(StateLetter(0x0000, 0), 'R');   // TASK_RUNNING
  EXPECT_EQ(StateLetter(0x0001, 0), 'S');   // TASK_INTERRUPTIBLE
  EXPECT_EQ(StateLetter(0x0002, 0), 'D');   // TASK_UNINTERRUPTIBLE
  EXPECT_EQ(StateLetter(0x0004, 0), 'T');   // __TASK_STOPPED
  EXPECT_EQ(StateLetter(0x0008, 0), 't');   // __TASK_TRACED
  EXPECT_EQ(StateLetter(0x0040, 0), 'P');   // TASK_PARKED
  EXPECT_EQ(StateLetter(0x0402, 0), 'I');   // TASK_IDLE: uninterruptible, not counted as load
}

TEST(TaskStateLettersTest, ExitStateWinsOverTheDeadTasksState) {
  EXPECT_EQ(StateLetter(0x0080, 0x20), 'Z');  // TASK_DEAD with EXIT_ZOMBIE
  EXPECT_EQ(StateLetter(0x0080, 0x10), 'X');  // EXIT_DEAD
  EXPECT_EQ(StateLetter(0x0000, 0x20), 'Z');  // a zombie leader whose threads still run
}

TEST(TaskStateLettersTest, FlagsOutsideTheReportMaskKeepOrChangeTheLetterAsTheKernelDoes) {
  EXPECT_EQ(StateLetter(0x0102, 0), 'D');   // TASK_KILLABLE
  EXPECT_EQ(StateLetter(0x2102, 0), 'D');   // killable and freezable: vfork's parent
  EXPECT_EQ(StateLetter(0x2001, 0), 'S');   // interruptible and freezable
  EXPECT_EQ(StateLetter(0x2402, 0), 'I');   // idle and freezable (the kernel masks, since 6.1)
  EXPECT_EQ(StateLetter(0x8000, 0), 'D');   // TASK_FROZEN
  EXPECT_EQ(StateLetter(0x1000, 0), 'D');   // TASK_RTLOCK_WAIT
  EXPECT_EQ(StateLetter(0x0104, 0), 'T');   // TASK_STOPPED (with TASK_WAKEKILL)
  EXPECT_EQ(StateLetter(0x0108, 0), 't');   // TASK_TRACED as 6.1 and earlier set it
}

TEST(TaskStateLettersTest, EveryLetterLandsInACounter) {
  for (uint32_t bit = 0; bit < 32; bit++) {
    TaskStateCounts counts;
    for (uint32_t exit_state : {0u, 0x10u, 0x20u}) {
      const char letter = StateLetter(1u << bit, exit_state);
      EXPECT_NE(CounterFor(letter, counts), nullptr) << "bit " << bit << ": '" << letter << "'";
    }
  }
}

}  // namespace
}  // namespace stagewatch
