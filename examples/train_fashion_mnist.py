"""Trains LeNet on Fashion-MNIST with the MegEngine API, as a MegEngine user would write it.

    python3 examples/train_fashion_mnist.py [--epochs 5] [--checkpoint lenet.mge] [--resume]
                                            [--max-steps N] [--trace]

Reads Debian's dataset-fashion-mnist files (/usr/share/datasets/fashion-mnist), prints a progress
bar and a loss/accuracy line per epoch, and saves a checkpoint after each epoch that --resume
continues from. With --trace the training step (forward, backward, SGD update) is a
megengine.jit.trace: recorded on its first call, a compiled graph afterwards.
"""

import argparse
import os
import time

import numpy as np
from tqdm import tqdm

import megengine as mge
import megengine.data.transform as T
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine import data
from megengine.autodiff import GradManager
from megengine.jit import trace


class LeNet(M.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = M.Conv2d(1, 6, 5)
        self.conv2 = M.Conv2d(6, 16, 5)
        self.fc1 = M.Linear(16 * 4 * 4, 120)
        self.fc2 = M.Linear(120, 84)
        self.fc3 = M.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def build_loader(train, batch_size):
    dataset = data.dataset.FashionMNIST(train=train)
    if train:
        sampler = data.RandomSampler(dataset, batch_size=batch_size, drop_last=True, seed=0)
    else:
        sampler = data.SequentialSampler(dataset, batch_size=batch_size)
    transform = T.Compose([T.Normalize(mean=72.94, std=90.02), T.ToMode("CHW")])
    return data.DataLoader(dataset, sampler=sampler, transform=transform, num_workers=0)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for images, labels in loader:
        logits = model(mge.Tensor(images))
        correct += int((F.argmax(logits, axis=1) == mge.Tensor(labels)).sum().item())
        total += len(labels)
    return correct / total


def main():
    parser = argparse.ArgumentParser(description="LeNet on Fashion-MNIST")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--checkpoint", default="lenet_fashion_mnist.mge")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument(
        "--max-steps", type=int, default=None, help="stop each epoch after this many steps"
    )
    parser.add_argument("--trace", action="store_true", help="run a traced training step")
    args = parser.parse_args()

    mge.random.seed(0)
    model = LeNet()
    gm = GradManager().attach(model.parameters())
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    start_epoch = 0
    if args.resume and os.path.exists(args.checkpoint):
        state = mge.load(args.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1
        print(f"resumed from {args.checkpoint} after epoch {state['epoch'] + 1}")

    def train_step(images, labels):
        with gm:
            loss = F.nn.cross_entropy(model(images), labels)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    if args.trace:
        train_step = trace(train_step)

    train_loader = build_loader(True, args.batch_size)
    test_loader = build_loader(False, 500)
    for epoch in range(start_epoch, args.epochs):
        model.train()
        losses, t0 = [], time.time()
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False)
        for step, (images, labels) in enumerate(bar):
            if args.max_steps is not None and step >= args.max_steps:
                break
            loss = train_step(mge.Tensor(images), mge.Tensor(labels))
            losses.append(loss.item())
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
        accuracy = evaluate(model, test_loader)
        print(
            f"epoch {epoch + 1}: train loss {np.mean(losses):.4f}, "
            f"test accuracy {accuracy:.2%}, {time.time() - t0:.0f}s"
        )
        mge.save(
            {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch},
            args.checkpoint,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
