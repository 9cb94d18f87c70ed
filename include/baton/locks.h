/* baton/locks.h - every typed lock API. */
#ifndef BATON_LOCKS_H
#define BATON_LOCKS_H
#include <baton/tas.h>
#include <baton/ttas.h>
#include <baton/ticket.h>
#include <baton/mcs.h>
#include <baton/clh.h>
#include <baton/onespinner.h>
#include <baton/relay.h>
#include <baton/runner.h>
#endif
