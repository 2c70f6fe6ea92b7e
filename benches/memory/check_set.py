"""Checks the memory benchmark's retrieval set (family_items.json, questions.json beside this file): ids, fields, counts per language and kind, and that each expected item is readable by its asker and no forbidden one is. Run: python3 benches/memory/check_set.py"""
import json, re, sys
from collections import Counter

D = __import__('os').path.dirname(__import__('os').path.abspath(__file__)) + '/'
items = json.load(open(D + 'family_items.json'))
qs = json.load(open(D + 'questions.json'))
err = []
MEMBERS = {'anna', 'tom', 'max', 'lena'}
LANGS = {'en', 'de', 'fr', 'es'}
CONVS = {'telegram:' + m for m in MEMBERS} | {'telegram:family-group'}

ids = [i['id'] for i in items]
for x, c in Counter(ids).items():
    if c > 1: err.append(f'duplicate item id {x}')
by = {i['id']: i for i in items}
for i in items:
    k = i['id']
    if not re.fullmatch(r'[a-z0-9]+(-[a-z0-9]+)*', k): err.append(f'{k}: id not kebab')
    if i['kind'] not in ('chat', 'note', 'document'): err.append(f'{k}: kind')
    if i['member'] not in MEMBERS: err.append(f'{k}: member')
    if i['language'] not in LANGS: err.append(f'{k}: language')
    if not re.fullmatch(r'2026-(0[1-9]|1[01])-\d\d', i['date']): err.append(f'{k}: date {i["date"]}')
    if not i['text'].strip(): err.append(f'{k}: empty text')
    if i['kind'] == 'chat':
        if i['readers'] != 'conversation': err.append(f'{k}: chat readers')
        if i.get('conversation') not in CONVS: err.append(f'{k}: conversation')
        if i['conversation'].startswith('telegram:') and i['conversation'] != 'telegram:family-group' \
                and i['conversation'] != 'telegram:' + i['member']:
            err.append(f'{k}: private chat of another member')
        if i['title'] != '': err.append(f'{k}: chat title must be empty')
    else:
        if i['readers'] not in ('family', 'member'): err.append(f'{k}: readers')
        if 'conversation' in i: err.append(f'{k}: conversation on non-chat')
        if not i['title']: err.append(f'{k}: missing title')


def readable(item, asker):
    r = item['readers']
    if r == 'family': return True
    if r == 'member': return item['member'] == asker
    if r == 'conversation':
        return item['conversation'] in ('telegram:family-group', 'telegram:' + asker)
    return False


qids = [q['id'] for q in qs]
for x, c in Counter(qids).items():
    if c > 1: err.append(f'duplicate question id {x}')
privacy = 0
cross = 0
for q in qs:
    k = q['id']
    if q['asker'] not in MEMBERS: err.append(f'{k}: asker')
    if q['language'] not in LANGS: err.append(f'{k}: language')
    exp = q['expected']
    if 'forbidden' in q:
        privacy += 1
        if exp: err.append(f'{k}: privacy question with expected ids')
        if not q['forbidden']: err.append(f'{k}: empty forbidden')
        for f in q['forbidden']:
            if f not in by: err.append(f'{k}: forbidden {f} missing'); continue
            if readable(by[f], q['asker']): err.append(f'{k}: forbidden {f} IS readable by {q["asker"]}')
    else:
        if not 1 <= len(exp) <= 2: err.append(f'{k}: expected must have 1-2 ids')
        for e in exp:
            if e not in by: err.append(f'{k}: expected {e} missing'); continue
            if not readable(by[e], q['asker']): err.append(f'{k}: expected {e} NOT readable by {q["asker"]}')
        langs = {by[e]['language'] for e in exp if e in by}
        if langs and q['language'] not in langs: cross += 1

print('items:', len(items))
print('  by language:', dict(Counter(i['language'] for i in items)))
print('  by kind:', dict(Counter(i['kind'] for i in items)))
print('  by member:', dict(Counter(i['member'] for i in items)))
print('  by readers:', dict(Counter(i['readers'] for i in items)))
print('  chats by conversation:', dict(Counter(i['conversation'] for i in items if i['kind'] == 'chat')))
print('  dates:', min(i['date'] for i in items), '..', max(i['date'] for i in items))
print('questions:', len(qs))
print('  by language:', dict(Counter(q['language'] for q in qs)))
print('  by asker:', dict(Counter(q['asker'] for q in qs)))
print('  privacy (expected=[] + forbidden):', privacy)
print('  cross-language (question language differs from every expected item):', cross)
print('  expected size:', dict(Counter(len(q['expected']) for q in qs)))
used = {e for q in qs for e in q['expected']} | {f for q in qs for f in q.get('forbidden', [])}
print('  distinct items referenced:', len(used))

req = [(len(items) >= 320, 'items >= 320'),
       (sum(i['language'] == 'en' for i in items) >= 190, 'items en >= 190'),
       (sum(i['language'] == 'de' for i in items) >= 80, 'items de >= 80'),
       (sum(i['language'] == 'fr' for i in items) >= 25, 'items fr >= 25'),
       (sum(i['language'] == 'es' for i in items) >= 25, 'items es >= 25'),
       (len(qs) >= 110, 'questions >= 110'),
       (sum(q['language'] == 'en' for q in qs) >= 70, 'questions en >= 70'),
       (sum(q['language'] == 'de' for q in qs) >= 25, 'questions de >= 25'),
       (sum(q['language'] == 'fr' for q in qs) >= 8, 'questions fr >= 8'),
       (sum(q['language'] == 'es' for q in qs) >= 8, 'questions es >= 8'),
       (privacy >= 10, 'privacy >= 10'),
       (cross >= 10, 'cross-language >= 10')]
for ok, name in req:
    if not ok: err.append('requirement failed: ' + name)
print('ERRORS:' if err else 'OK: all checks passed')
for e in err: print('  ', e)
sys.exit(1 if err else 0)
