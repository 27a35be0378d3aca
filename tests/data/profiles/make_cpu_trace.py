#!/usr/bin/python3
"""Writes cpu_trace.json: a real PyTorch profiler (Kineto) Chrome trace of a tiny transformer
block trained on the CPU, for tests/profile and `trainsim diagnose --profile`.

Run with Debian's python3-torch (1.13): /usr/bin/python3 make_cpu_trace.py [OUT]
The model: embedding, one pre-norm attention block (torch's scaled_dot_product path is not in
1.13, so attention is matmul + softmax) and an MLP, vocabulary 512, hidden 64, sequence 32,
batch 4, AdamW. Each iteration sleeps 20 ms in its "data loader" before the forward, so the
trace has idle time between operators the way a slow input pipeline leaves the GPU idle.
The profiler's schedule skips 1 step, warms up 1 and records 3 (ProfilerStep#2..#4).
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule

VOCAB, HIDDEN, SEQ, BATCH = 512, 64, 32, 4
LOADER_SLEEP_S = 0.020


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HIDDEN)
        self.norm1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.norm2 = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.fc2 = nn.Linear(4 * HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens):
        x = self.emb(tokens)
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(1, 2) / HIDDEN**0.5, dim=-1)
        x = x + self.proj(att @ v)
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return self.head(x)


def batch():
    time.sleep(LOADER_SLEEP_S)  # the slow data loader
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1))
    return tokens[:, :-1], tokens[:, 1:]


def main(out):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(5):
            x, y = batch()
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu_trace.json")
