# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's service state (docs/quarantine.md, "Service state"): what quarantine and repair did to it is recorded
as events in the run store (store/service_events.py); its state (in service, quarantined since when and why,
the repairs tried) is derived from those events, in the order they were recorded, and never stored twice.

record_service_events is the gpufleet.core.service_state action's entry point; service_states and
states_on_connection are the reads for the others (the audit's reports, the repair ladder, the loop)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.run_folder import write_atomically
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError, make_engine, redacted
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import settings_for, store_error_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.schema import ensure_schema
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.service_events import append_events, read_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.text_safety import safe_line

EVENTS = ("quarantined", "kept_out", "left_in_service", "repair", "returned", "operator_out")
SCHEDULERS = ("slurm", "kubernetes", "services", "none")
STEPS = ("reset", "reboot", "rma")
RESULTS = ("passed", "failed")
STATES = ("in_service", "quarantined", "operator_out")
TEXT_FIELDS = {"rule": 200, "finding": None, "reason": None, "detail": None}  # field: the store's length limit
MAX_HOST = 255
SERVICE_FILE = "service.json"
SERVICE_FILE_VERSION = 1


class ServiceEventError(ValueError):
    """Events that cannot be recorded; the message names each bad event and what is wrong with it."""


def utc_text(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now():
    return utc_text(datetime.datetime.now(datetime.timezone.utc))


def parsed_time(value):
    """ISO 8601 text (naive means UTC) as the store's UTC text, or None when it is not a time."""
    try:
        moment = datetime.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return utc_text(moment)


def event_problems(event):
    """What is wrong with one event as given (a list of texts; empty: nothing)."""
    if not isinstance(event, dict):
        return ["is not a mapping"]
    problems = []
    if not isinstance(event.get("host"), str) or not event["host"].strip():
        problems.append("has no host")
    elif len(event["host"].strip()) > MAX_HOST:
        problems.append("host name is longer than %d characters" % MAX_HOST)
    if event.get("event") not in EVENTS:
        problems.append("event %r is not one of %s" % (event.get("event"), ", ".join(EVENTS)))
    if event.get("scheduler") not in (None,) + SCHEDULERS:
        problems.append("scheduler %r is not one of %s" % (event.get("scheduler"), ", ".join(SCHEDULERS)))
    if event.get("at") not in (None, "") and parsed_time(event["at"]) is None:
        problems.append("at %r is not an ISO 8601 time" % (event["at"],))
    if event.get("event") == "repair":
        if event.get("step") not in STEPS:
            problems.append("a repair's step %r is not one of %s" % (event.get("step"), ", ".join(STEPS)))
        if event.get("result") not in RESULTS:
            problems.append("a repair's result %r is not one of %s" % (event.get("result"), ", ".join(RESULTS)))
    return problems


def normalized_event(event, run_id, now):
    """The event as stored: its time in UTC (now when it has none), its texts on one safe line."""
    stored = {
        "host": event["host"].strip(),
        "event": event["event"],
        "at": parsed_time(event["at"]) if event.get("at") else now,
        "run_id": run_id,
        "scheduler": event.get("scheduler") or "none",
        "step": event.get("step") if event["event"] == "repair" else None,
        "result": event.get("result") if event["event"] == "repair" else None,
    }
    for field, limit in TEXT_FIELDS.items():
        value = event.get(field)
        stored[field] = safe_line(str(value), limit) if value not in (None, "") else None
    return stored


def normalized_events(events, run_id=None, now=None):
    """The events as stored, or ServiceEventError naming every bad one (by position and host): all or none."""
    now = now or utc_now()
    problems = []
    for position, event in enumerate(events or ()):
        for problem in event_problems(event):
            host = event.get("host") if isinstance(event, dict) else None
            problems.append("event %d (host %s) %s" % (position + 1, host if host else "?", problem))
    if problems:
        raise ServiceEventError("service events not recorded: " + "; ".join(problems))
    return [normalized_event(event, run_id, now) for event in events or ()]


def in_service():
    return {"state": "in_service", "since": None, "rule": None, "finding": None, "run_id": None,
            "scheduler": None, "reason": None, "repairs": [], "failed_repairs": 0, "last_event": None}


def taken_out(state, event, new_state):
    """state after event takes the node out (quarantined, operator_out): a node already in that state keeps
    its since and its repairs; one that was not starts a new episode (quarantined: with no repairs yet)."""
    if state["state"] == new_state:
        return state
    repairs = [] if new_state == "quarantined" else state["repairs"]
    return dict(state, state=new_state, since=event["at"], rule=event["rule"], finding=event["finding"],
                run_id=event["run_id"], scheduler=event["scheduler"], reason=event["reason"], repairs=repairs,
                failed_repairs=sum(1 for repair in repairs if repair["result"] == "failed"))


def with_repair(state, event):
    repairs = state["repairs"] + [{"step": event["step"], "result": event["result"], "at": event["at"]}]
    return dict(state, repairs=repairs, failed_repairs=state["failed_repairs"] + (event["result"] == "failed"))


def returned(state, event):
    """In service again; the repairs of the episode that ended stay visible until the next quarantine."""
    return dict(state, state="in_service", since=event["at"], rule=None, finding=None, run_id=event["run_id"],
                scheduler=event["scheduler"], reason=None)


def next_state(state, event):
    kind = event["event"]
    if kind in ("quarantined", "kept_out"):
        state = taken_out(state, event, "quarantined") if state["state"] != "operator_out" else state
    elif kind == "operator_out":
        state = taken_out(state, event, "operator_out")
    elif kind == "repair":
        state = with_repair(state, event)
    elif kind == "returned":
        state = returned(state, event)
    # left_in_service: the breaker left the node where it was; the event stays its last
    return dict(state, last_event={"event": kind, "at": event["at"], "reason": event["reason"],
                                   "detail": event["detail"]})


def derive_states(events):
    """{host: service state} from the hosts' events in the order they were recorded."""
    states = {}
    for event in events:
        states[event["host"]] = next_state(states.get(event["host"]) or in_service(), event)
    return states


def states_on_connection(connection, hosts=None):
    """{host: service state} of the hosts (None: every host the store has events of) that have events."""
    return derive_states(read_events(connection, hosts))


def service_states(settings, hosts=None):
    """{host: service state} from the store of settings (store.record.StoreSettings); StoreError when the
    store is off or cannot be read."""
    engine = open_store(settings)
    try:
        with engine.connect() as connection:
            return states_on_connection(connection, hosts)
    finally:
        engine.dispose()


def open_store(settings):
    if settings is None or not settings.url:
        raise StoreError("the run store is off (gpufleet_store: false or GPUFLEET_STORE=off): a node's service "
                         "state lives in the store")
    engine = make_engine(settings.url)
    try:
        ensure_schema(engine)
    except Exception:
        engine.dispose()
        raise
    return engine


def record_service_events(settings, events, run_id=None, check_mode=False, now=None):
    """Appends the events to the store (one transaction) and returns (events as stored, {host: service state} of
    every host the store knows, with these events). check_mode: nothing is written; the states are what they
    would be. ServiceEventError for bad events (nothing recorded), StoreError when the store is off or fails."""
    stored = normalized_events(events, run_id, now)
    engine = open_store(settings)
    try:
        with engine.begin() as connection:
            if check_mode:
                return stored, derive_states(read_events(connection) + stored)
            append_events(connection, stored)
            return stored, states_on_connection(connection)
    finally:
        engine.dispose()


def service_document(states, run_id=None, generated_at=None):
    return {"version": SERVICE_FILE_VERSION, "run_id": run_id, "generated_at": generated_at or utc_now(),
            "hosts": {host: states[host] for host in sorted(states)}}


def write_service_file(run_folder, states, run_id=None):
    """<run_folder>/service.json (the folder is created); returns its path."""
    os.makedirs(run_folder, exist_ok=True)
    text = json.dumps(service_document(states, run_id), indent=1, sort_keys=True) + "\n"
    return write_atomically(os.path.join(run_folder, SERVICE_FILE), text)


def service_state_task(args, check_mode=False):
    """The gpufleet.core.service_state task's result for its arguments (plugins/modules/service_state.py): never
    raises for bad events or a store that fails; the result says which."""
    settings = settings_for(args["report_root"], args.get("store_url"), args.get("store", True))
    run_id = args.get("run_id")
    try:
        stored, states = record_service_events(settings, args.get("events") or [], run_id, check_mode)
    except ServiceEventError as exc:
        return {"failed": True, "msg": str(exc)}
    except Exception as exc:  # pylint: disable=broad-except  # any store failure is the task's message
        return {"failed": True, "msg": "service events not recorded: the run store %s: %s" % (
            redacted(settings.url) if settings.url else "(off)", store_error_text(exc))}
    result = {"changed": bool(stored), "states": states, "events": stored,
              "recorded": 0 if check_mode else len(stored)}
    if args.get("run_folder") and not check_mode:
        try:
            result["path"] = write_service_file(args["run_folder"], states, run_id)
        except OSError as exc:
            result.update(failed=True, msg="service events recorded, but %s not written: %s" % (SERVICE_FILE, exc))
            return result
    result["msg"] = "%d service events %s; %d nodes known, %d out of service" % (
        len(stored), "would be recorded" if check_mode else "recorded", len(states),
        sum(1 for state in states.values() if state["state"] != "in_service"))
    return result
