"""Independent Python side of the RULER tests: RULER's templates (NVIDIA/RULER
scripts/data/synthetic/constants.py, answer prefix appended as for base models), its scoring
(scripts/eval/synthetic/constants.py: string_match_all / string_match_part after postprocess_pred),
answers recomputed from a prompt's own text, and a tiny LLaMA trained to retrieve needles."""

import collections
import math
import random
import re

import torch
import transformers

NIAH = ("Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
        "{type_needle_v} for {query} mentioned in the provided text? The special magic {type_needle_v} for "
        "{query} mentioned in the provided text are")
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
MAX_NEW = {"vt": 30, "cwe": 120, "fwe": 50, "qa_1": 32, "qa_2": 32}  # niah_*: 128
NIAH_TASKS = {  # name: (haystack, key type, value type, keys, values, queries), scripts/synthetic.yaml
    "niah_single_1": ("noise", "words", "numbers", 1, 1, 1),
    "niah_single_2": ("essay", "words", "numbers", 1, 1, 1),
    "niah_single_3": ("essay", "words", "uuids", 1, 1, 1),
    "niah_multikey_1": ("essay", "words", "numbers", 4, 1, 1),
    "niah_multikey_2": ("needle", "words", "numbers", 1, 1, 1),
    "niah_multikey_3": ("needle", "uuids", "uuids", 1, 1, 1),
    "niah_multivalue": ("essay", "words", "numbers", 1, 4, 1),
    "niah_multiquery": ("essay", "words", "numbers", 1, 1, 4),
}


def max_new_tokens(task):
    return MAX_NEW.get(task, 128)


def niah_template(values, queries, value_type):
    """RULER's template with its singular rewrite when one value is asked for."""
    t, v = NIAH, value_type
    if values * queries == 1:
        t = t.replace("Some", "A").replace("are all", "is").replace("are", "is").replace("answers", "answer")
        v = v[:-1]
    return t, v


def postprocess(pred):
    return re.sub(r"[\x00-\x1f]", "\n", pred.strip()).strip()


def string_match_all(pred, refs):
    return sum(1.0 if r.lower() in pred.lower() else 0.0 for r in refs) / len(refs)


def string_match_part(pred, refs):
    return max(1.0 if r.lower() in pred.lower() else 0.0 for r in refs)


def niah_answers(task, prompt):
    """Values of the queried keys, read from the prompt's needles."""
    _, _, vtype, _, nv, nq = NIAH_TASKS[task]
    t, v = niah_template(nv, nq, vtype)
    head, question_fmt = t.split("{context}")
    assert prompt.startswith(head.format(type_needle_v=v)), prompt[:200]
    question = question_fmt.split("{query}")[0].format(type_needle_v=v)
    q = prompt[prompt.rindex(question) + len(question):].split(" mentioned in the provided text?")[0]
    queries = q.replace(", and ", ", ").split(", ") if nq > 1 else [q]
    assert prompt.endswith(question_fmt.format(type_needle_v=v, query=q)), prompt[-300:]
    answers = []
    for key in queries:
        found = re.findall(r"One of the special magic " + vtype + " for " + re.escape(key) + r" is: (\S+)\.", prompt)
        assert len(found) == nv, (key, found)
        answers += found
    return answers


def vt_answers(prompt):
    """Every variable of the last text's chain that ends at the queried value."""
    body = prompt.split("\n\n")[-2:]  # the solved example (if any) comes before
    text = "\n\n".join(body)
    value = re.search(r"assigned the value (\d+) in the text above", text).group(1)
    assigned = dict(re.findall(r"VAR ([A-Z]+) = (\d+|VAR [A-Z]+)", text))
    out = []
    for var in assigned:
        v = var
        while assigned.get(v, "").startswith("VAR "):
            v = assigned[v][4:]
        if assigned.get(v) == value:
            out.append(var)
    return out


def cwe_answers(prompt):
    last = prompt.split("Memorize the ones that appear most often.\n")[-1].split("\nQuestion:")[0]
    words = re.findall(r"\d+\. (\S+)", last)
    counts = collections.Counter(words)
    top = counts.most_common()
    assert top[9][1] > top[10][1], "the 10 common words are not separated from the rest"
    return [w for w, _ in top[:10]]


def fwe_answers(prompt):
    text = prompt.split("Find the three most frequently appeared coded words. ")[1].split("\nQuestion:")[0]
    counts = collections.Counter(w for w in text.split() if w != "...")
    top = counts.most_common()
    assert top[2][1] > top[3][1] if len(top) > 3 else True
    return [w for w, _ in top[:3]]


# ---- a tiny LLaMA that retrieves ----

def retrieval_prompt(rng, words, noise_lines):
    """A niah_single_1 prompt as RULER builds it (noise haystack), and its answer."""
    key = f"{rng.choice(words)}-{rng.choice(words)}"
    value = str(rng.randint(1000000, 9999999))
    lines = [NOISE] * noise_lines
    lines.insert(rng.randint(0, noise_lines), f"One of the special magic numbers for {key} is: {value}.")
    t, v = niah_template(1, 1, "numbers")
    return t.format(type_needle_v=v, context="\n".join(lines), query=key), value


def passkey_prompt(rng, filler):
    key = str(rng.randint(1, 50000))
    before = rng.randint(0, filler)
    rep = lambda n: " ".join(["The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."] * n)
    text = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
            "I will quiz you about the important information there.\n" + rep(before) + "\nThe pass key is " + key +
            ". Remember it. " + key + " is the pass key.\n" + rep(filler - before) + "\nWhat is the pass key? The pass key is")
    return text, key


def retrieval_train(folder, tok, words, steps, seed=0, threads=2, budget_s=60.0):
    """Trains the LlamaForCausalLM in `folder` in place on retrieval prompts (loss on the answer only)
    until `steps` or `budget_s`; returns the final mean answer loss."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    model = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.0)
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    import time
    start, losses = time.time(), []
    for step in range(steps):
        batch, labels = [], []
        for _ in range(16):
            if rng.random() < 0.5:
                prompt, answer = retrieval_prompt(rng, words, rng.randint(1, 6))
                answer = " " + answer + "."
            else:
                prompt, answer = passkey_prompt(rng, rng.randint(1, 5))
                answer = " " + answer + "."
            p = tok.encode(prompt).ids
            a = tok.encode(prompt + answer).ids[len(p):] + [eos]
            batch.append(p + a)
            labels.append([-100] * len(p) + a)
        n = max(len(x) for x in batch)
        ids = torch.tensor([x + [eos] * (n - len(x)) for x in batch])
        lab = torch.tensor([x + [-100] * (n - len(x)) for x in labels])
        lr = 3e-3 * min(1.0, (step + 1) / 30) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for g in opt.param_groups:
            g["lr"] = lr
        loss = model(input_ids=ids, labels=lab).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if time.time() - start > budget_s:
            break
    model.eval().save_pretrained(str(folder))
    return sum(losses[-20:]) / len(losses[-20:]), len(losses), time.time() - start
