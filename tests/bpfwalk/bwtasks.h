/*
 * The running task's search of the BPF program (find_tasks) on made-up
 * states of a 3.14 thread (bwtasks.c): test_bpfwalk --tasks.
 */
#ifndef BWTASKS_H
#define BWTASKS_H

#include <stdio.h>

/* Runs each case, one line each to out; the cases that failed. */
int bwtasks_run(FILE *out);

#endif
