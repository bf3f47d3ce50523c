/*
 * Probes: callbacks attached to an event. A probe list is replaced as a
 * whole (copy, publish, grace period, free the old one), so a tracepoint
 * walks either the old list or the new one.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/event_internal.h"

static size_t rt_set_size(uint32_t n)
{
	return sizeof(struct ringtrace_probe_set) + sizeof(struct ringtrace_probe) * (n ? n : 1);
}

int ringtrace_probe_register(struct ringtrace_event_desc *ev, ringtrace_probe_fn fn, void *data)
{
	if (!ev || !fn)
		return rt_error(RINGTRACE_EINVAL, "probe_register: NULL event or function");
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked(); /* (registers the deferred events) */
	struct rt_entry *e = ev->reg;
	if (!e || e->desc != ev) {
		pthread_mutex_unlock(&rt_reg_lock);
		return rt_error(RINGTRACE_ENOENT, "probe_register: event \"%s\" is not registered",
				ev->name);
	}
	struct ringtrace_probe_set *old = e->probes;
	uint32_t n = old ? old->count : 0;
	for (uint32_t i = 0; i < n; i++) {
		if (old->probe[i].fn == fn && old->probe[i].data == data) {
			pthread_mutex_unlock(&rt_reg_lock);
			return rt_error(RINGTRACE_EINVAL,
					"probe_register: this probe is already attached to \"%s\"",
					ev->name);
		}
	}
	struct ringtrace_probe_set *set = malloc(rt_set_size(n + 1));
	if (!set) {
		pthread_mutex_unlock(&rt_reg_lock);
		return rt_error(RINGTRACE_ENOMEM, "probe_register: out of memory");
	}
	set->count = n + 1;
	set->pad = 0;
	for (uint32_t i = 0; i < n; i++)
		set->probe[i] = old->probe[i];
	set->probe[n].fn = fn;
	set->probe[n].data = data;
	rt_rcu_register(); /* (before the event's first call enters a section) */
	e->probes = set;
	rt_apply_probes(e);
	pthread_mutex_unlock(&rt_reg_lock);
	ringtrace_synchronize();
	free(old);
	return 0;
}

int ringtrace_probe_unregister(struct ringtrace_event_desc *ev, ringtrace_probe_fn fn, void *data)
{
	if (!ev || !fn)
		return rt_error(RINGTRACE_EINVAL, "probe_unregister: NULL event or function");
	pthread_mutex_lock(&rt_reg_lock);
	rt_read_env_locked();
	struct rt_entry *e = ev->reg;
	struct ringtrace_probe_set *old = e && e->desc == ev ? e->probes : NULL;
	uint32_t n = old ? old->count : 0, at = n;
	for (uint32_t i = 0; i < n; i++)
		if (old->probe[i].fn == fn && old->probe[i].data == data)
			at = i;
	if (at == n) {
		pthread_mutex_unlock(&rt_reg_lock);
		return rt_error(RINGTRACE_ENOENT, "probe_unregister: probe not attached to \"%s\"",
				ev->name);
	}
	struct ringtrace_probe_set *set = NULL;
	if (n > 1) {
		set = malloc(rt_set_size(n - 1));
		if (!set) {
			pthread_mutex_unlock(&rt_reg_lock);
			return rt_error(RINGTRACE_ENOMEM, "probe_unregister: out of memory");
		}
		set->count = 0;
		set->pad = 0;
		for (uint32_t i = 0; i < n; i++)
			if (i != at)
				set->probe[set->count++] = old->probe[i];
	}
	e->probes = set;
	rt_apply_probes(e);
	pthread_mutex_unlock(&rt_reg_lock);
	/* After this no call can still be running the removed probe. */
	ringtrace_synchronize();
	free(old);
	return 0;
}
