/*
 * --record: the pipeline's event log (src/pipeline/pipeline.h) written into
 * the open recording (src/record/record.h). Every event the pipeline takes
 * in is logged as it enters, so replay feeds back exactly those events.
 */
#ifndef EVENTLOG_H
#define EVENTLOG_H

#include "pipeline.h"

struct recorder;

/* Fills log so that it appends to rec (from record_open()). */
void record_event_log(struct recorder *rec, struct pipeline_log *log);

#endif
