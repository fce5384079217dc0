#!/usr/bin/env python3
"""Writes random scenarios: seeded sequences of writes (create, PUT, merge / JSON / strategic
patches, apply by several managers with and without force, delete) on one ConfigMap and one
Deployment, each ending with a GET of both. The same seed writes the same files.

    generate_random.py [--count 20] [--seed 33] [--steps 8]   # writes scenarios/random-NNN.yaml
"""

import argparse
import os
import random

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CM = "/api/v1/namespaces/{ns}/configmaps"
DEP = "/apis/apps/v1/namespaces/{ns}/deployments"
MANAGERS = ["alice", "bob", "carol"]
KEYS = ["a", "b", "c", "d"]
IMAGES = ["nginx:1.27", "nginx:1.28", "redis:7"]


def cm_body(rng):
    """A ConfigMap with a random subset of keys and a random label."""
    data = {k: str(rng.randint(0, 3)) for k in rng.sample(KEYS, rng.randint(1, len(KEYS)))}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "labels": {"v": str(rng.randint(0, 2))}},
            "data": data}


def dep_body(rng, partial=False):
    """A Deployment (the whole object, or only a replicas/container part for a second applier)."""
    containers = [{"name": n, "image": rng.choice(IMAGES)} for n in rng.sample(["app", "side"], rng.randint(1, 2))]
    spec = {"template": {"spec": {"containers": containers}}}
    if rng.random() < 0.5 or not partial:
        spec["replicas"] = rng.randint(0, 4)
    if not partial:
        spec["selector"] = {"matchLabels": {"app": "r"}}
        spec["template"]["metadata"] = {"labels": {"app": "r"}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "r"}, "spec": spec}


def step(rng):
    """One random write."""
    kind = rng.choice(["cm", "dep"])
    path = (CM if kind == "cm" else DEP) + "/r"
    op = rng.choice(["apply", "apply", "merge", "json", "strategic", "put", "delete"])
    if op == "apply":
        body = cm_body(rng) if kind == "cm" else dep_body(rng, partial=True)
        q = {"fieldManager": rng.choice(MANAGERS)}
        if rng.random() < 0.3:
            q["force"] = "true"
        return {"patch": "apply", "path": path, "query": q, "body": body}
    if op == "merge":
        body = {"data": {rng.choice(KEYS): rng.choice([None, "x", "y"])}} if kind == "cm" else \
            {"spec": {"replicas": rng.randint(0, 5)}}
        return {"patch": "merge", "path": path, "body": body, "query": {"fieldManager": rng.choice(MANAGERS)}}
    if op == "json":
        body = [{"op": "add", "path": f"/metadata/labels/{rng.choice(KEYS)}", "value": "j"}]
        return {"patch": "json", "path": path, "body": body}
    if op == "strategic":
        body = {"metadata": {"annotations": {"n": str(rng.randint(0, 9))}}} if kind == "cm" else \
            {"spec": {"template": {"spec": {"containers": [{"name": rng.choice(["app", "side"]), "image": rng.choice(IMAGES)}]}}}}
        return {"patch": "strategic", "path": path, "body": body}
    if op == "put":
        body = cm_body(rng) if kind == "cm" else dep_body(rng)
        return {"method": "PUT", "path": path, "body": body}
    return {"method": "DELETE", "path": path}


def scenario(rng, i, steps):
    """One scenario: create both objects, random writes, GET both."""
    first = [{"method": "POST", "path": CM, "body": cm_body(rng)}, {"method": "POST", "path": DEP, "body": dep_body(rng)}]
    last = [{"method": "GET", "path": CM + "/r"}, {"method": "GET", "path": DEP + "/r"}]
    return {"name": f"random-{i:03d}", "description": f"Random writes on a ConfigMap and a Deployment ({steps} steps, "
            "generate_random.py).", "steps": first + [step(rng) for _ in range(steps)] + last}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--seed", type=int, default=33)
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    rng = random.Random(args.seed)
    for i in range(args.count):
        sc = scenario(rng, i, args.steps)
        with open(os.path.join(HERE, "scenarios", f"{sc['name']}.yaml"), "w") as f:
            yaml.safe_dump(sc, f, sort_keys=False, default_flow_style=None, width=110)


if __name__ == "__main__":
    main()
