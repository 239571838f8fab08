#!/usr/bin/env python3
"""Shared notes across your paired devices: reliable items plus the latest snapshot.

    notes.py [--socket PATH] add TEXT        # keep a note here and send it to every paired device
    notes.py [--socket PATH] show            # every note: this device's, received ones, peers' snapshots
    notes.py [--socket PATH] watch [--count N] [--timeout S]   # print notes as they arrive

A note goes out reliably (a device that is off gets it when it is back, once); every `add` also
publishes this device's notes as the latest snapshot, so a device paired later sees them with `show`.
`watch` keeps the notes it receives in --state; `show` merges them with each peer's latest
snapshot (a note in both is shown once) and lists them oldest first, per device.
"""
import argparse
import json
import os
import sys
import time

import sessionmesh

FEATURE = "notes"


def load(path):
    state = {"notes": [], "seen": [], "received": {}}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            state.update(json.load(handle))
    return state


def save(path, state):  # notes and the event IDs already shown, in --state
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(path + ".tmp", path)


def add(client, state, text):
    note = {"text": text, "at": time.time()}
    state["notes"].append(note)
    sent = client.send(FEATURE, json.dumps(note).encode(), mode="reliable")
    client.publish_snapshot(FEATURE, json.dumps(state["notes"]).encode())
    print(f"sent to {sent.peers} device(s): {text}")


def show(client, state):
    print(f"this device ({len(state['notes'])}):", *(f"  {n['text']}" for n in state["notes"]), sep="\n")
    for peer in client.peers():
        latest = client.latest_snapshot(FEATURE, peer=peer.device_id)
        merged = {(n["text"], n["at"]): n for n in (json.loads(latest.payload) if latest else [])}
        for note in state["received"].get(peer.device_id, []):  # received by watch, maybe not in a snapshot yet
            merged.setdefault((note["text"], note["at"]), note)
        notes = sorted(merged.values(), key=lambda n: n["at"])
        print(f"{peer.name} ({len(notes)}):", *(f"  {n['text']}" for n in notes), sep="\n")


def watch(client, state, path, count, timeout):
    names, printed = {peer.device_id: peer.name for peer in client.peers()}, 0
    with client.attach([FEATURE], app="notes-example") as events:
        while count is None or printed < count:
            try:
                event = events.next_event(timeout=timeout)
            except sessionmesh.ClientTimeoutError:
                return 1 if count is not None else 0
            if event.kind != "envelope":
                continue
            key = str(event.event_id)
            if key not in state["seen"]:  # a redelivery "may have been seen": dedup by event ID
                note = json.loads(event.payload)
                print(f"note from {names.get(event.from_device, event.from_device)}: {note['text']}", flush=True)
                state["received"].setdefault(event.from_device, []).append(note)
                state["seen"] = (state["seen"] + [key])[-10000:]
                save(path, state)
                printed += 1
            event.ack()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", help="meshd's socket (default: the one meshctl uses)")
    parser.add_argument("--state", help="this device's notes file")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("add").add_argument("text")
    sub.add_parser("show")
    w = sub.add_parser("watch")
    w.add_argument("--count", type=int, help="stop after this many notes (exit 1 if they do not come in time)")
    w.add_argument("--timeout", type=float, help="seconds to wait for the next note")
    args = parser.parse_args()
    try:
        client = sessionmesh.connect(args.socket, app="notes-example")
    except sessionmesh.MeshError as error:
        sys.exit(f"notes: {error}")
    with client:
        path = args.state or os.path.expanduser(f"~/.local/state/sessionmesh-notes-{client.device_id[:7]}.json")
        state = load(path)
        if args.command == "watch":
            return watch(client, state, path, args.count, args.timeout)
        add(client, state, args.text) if args.command == "add" else show(client, state)
        save(path, state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
