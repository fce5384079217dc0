#!/usr/bin/env python3
"""Adds to ../gofields.json the Go struct facts of the given `generated.proto` files, read from the
Go packages of a k8s.io/api module directory (the Go module cache's `k8s.io/api@vX.Y.Z`).

Usage: python3 codec/k8s-api/tools/add_gofields.py API_MODULE_DIR proto/k8s.io/api/events/v1/generated.proto ...

The rules are those of the conformance bundle's `tools/extract_gofields.py` (which reads git
mirrors instead of a module directory): per protobuf field number, the Go type and the json tag
(name, omitempty, omitzero, inline), and whether the struct embeds metav1.TypeMeta."""
import json, os, re, sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = sys.argv[1]


def go_structs(pkgdir):
    out = {}
    for f in sorted(os.listdir(pkgdir)):
        if not f.endswith('.go') or f.endswith('_test.go') or f.endswith('generated.pb.go') or 'zz_generated' in f:
            continue
        lines = open(os.path.join(pkgdir, f)).read().split('\n')
        i = 0
        while i < len(lines):
            m = re.match(r'^type (\w+) struct \{\s*$', lines[i])
            if m:
                fields = []
                i += 1
                while i < len(lines) and not lines[i].startswith('}'):
                    fm = re.match(r'^\s*(?:(\w+)\s+)?([\*\[\]\w\.]+)\s+`([^`]*)`', lines[i])
                    if fm and not lines[i].strip().startswith('//'):
                        tags = dict(re.findall(r'(\w+):"([^"]*)"', fm.group(3)))
                        fields.append(dict(go=fm.group(1), type=fm.group(2), **tags))
                    i += 1
                out[m.group(1)] = fields
            i += 1
    return out


path = os.path.join(HERE, 'gofields.json')
doc = json.load(open(path))
out = doc['messages']
for proto in sys.argv[2:]:
    txt = open(proto).read()
    pkg = re.search(r'^package ([\w.]+);', txt, re.M).group(1)
    gopkg = re.search(r'^option go_package = "([^"]+)";', txt, re.M).group(1)
    structs = go_structs(os.path.join(API, gopkg[len('k8s.io/api/'):]))
    cur = None
    for line in txt.split('\n'):
        m = re.match(r'^message (\w+) \{', line)
        if m:
            name = m.group(1)
            cur = pkg + '.' + name
            gs = structs.get(name)
            entry = {'goPackage': gopkg, 'goType': name, 'fields': {}}
            if gs is None:
                entry['note'] = 'no Go struct (named slice/alias or empty type)'
            else:
                entry['typeMetaInline'] = any(f['go'] is None and f['type'].endswith('TypeMeta') and 'protobuf' not in f for f in gs)
                for f in gs:
                    if 'protobuf' not in f or f['protobuf'] == '-':
                        continue
                    num = int(f['protobuf'].split(',')[1])
                    j = f.get('json')
                    jname = None if j is None else j.split(',')[0]
                    opts = [] if j is None else j.split(',')[1:]
                    entry['fields'][str(num)] = {
                        'goName': f['go'] or f['type'].lstrip('*').split('.')[-1],
                        'goType': f['type'],
                        'json': None if (j is None or jname == '-') else jname,
                        'omitempty': 'omitempty' in opts,
                        'omitzero': 'omitzero' in opts,
                        'inline': f['go'] is None and jname == '',
                    }
            out[cur] = entry
            continue
        if line.startswith('}'):
            cur = None
            continue
        if cur is None:
            continue
        m = re.match(r'^\s+(optional|repeated|required)?\s*(map<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*(\d+);', line)
        if m and m.group(4) in out[cur]['fields']:
            fe = out[cur]['fields'][m.group(4)]
            label = m.group(1) or 'map'
            fe['proto'] = m.group(3)
            fe['kind'] = ('slice' if label == 'repeated' else 'map' if label == 'map'
                          else 'ptr' if fe['goType'].startswith('*') else 'value')
doc['messages'] = dict(sorted(out.items()))
with open(path, 'w') as f:
    json.dump(doc, f, indent=1)
print(len(out), 'messages', sum(len(v['fields']) for v in out.values()), 'fields')
