/*
 * Test-only fault switches, in test builds only.
 *
 * A companion test breaks a native fast path on purpose and checks that
 * the test meant to catch the break does (a tail-chain left pending, a
 * frame stacked without the MPU's check, ...).  The switches for that are
 * compiled only when EMU_TEST_FAULTS is defined: tests build such a copy of
 * the native modules for themselves (tests/helpers/nativebuild.py) and load
 * it in place of the installed one for the test's duration.  The
 * production build has neither the fields nor the branches.
 *
 *   FAULT(expr)   expr in a test build, 0 otherwise
 */
#ifndef EMU_FAULTS_H
#define EMU_FAULTS_H

#ifdef EMU_TEST_FAULTS
#define FAULT(expr) (expr)
#else
#define FAULT(expr) 0
#endif

#endif
