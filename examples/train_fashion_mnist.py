"""Trains LeNet on Fashion-MNIST with the MegEngine API, as a MegEngine user would write it, then
dumps the trained network for inference and checks the C++ runtime's predictions against it.

    python3 examples/train_fashion_mnist.py [--epochs 10] [--checkpoint lenet.mge] [--resume]
                                            [--max-steps N] [--eager] [--workers N]
                                            [--out-dir DIR] [--load-and-run PATH]

Reads Debian's dataset-fashion-mnist files (/usr/share/datasets/fashion-mnist), prints a progress
bar and a loss/accuracy line per epoch, and saves a checkpoint after each epoch that --resume
continues from. The training step (forward, backward, SGD update) is a megengine.jit.trace:
recorded on its first call, a compiled graph afterwards (--eager runs it op by op instead).

After training it writes, in --out-dir: curves.png (loss and accuracy per epoch),
lenet_fashion_mnist.nmeg (the traced inference function, dumped with capture_as_const=True),
test_images.npy, and the C++ `load_and_run`'s output of the dumped model on those images; it
prints how many of the C++ predictions agree with Python's.
"""

import argparse
import os
import subprocess
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def build_loader(train, batch_size, workers):
    dataset = data.dataset.FashionMNIST(train=train)
    if train:
        sampler = data.RandomSampler(dataset, batch_size=batch_size, drop_last=True, seed=0)
    else:
        sampler = data.SequentialSampler(dataset, batch_size=batch_size)
    transform = T.Compose([T.Normalize(mean=72.94, std=90.02), T.ToMode("CHW")])
    return data.DataLoader(dataset, sampler=sampler, transform=transform, num_workers=workers)


def test_set(loader):
    images, labels = zip(*loader)
    return np.concatenate(images).astype("float32"), np.concatenate(labels)


def plot_curves(history, path):
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [h["train_loss"] for h in history], "o-", label="train loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy")
    ax_loss.legend()
    ax_acc.plot(epochs, [100 * h["test_accuracy"] for h in history], "o-", color="C1")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("test accuracy (%)")
    fig.suptitle("LeNet on Fashion-MNIST")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def find_load_and_run(explicit):
    if explicit:
        return explicit
    build = os.environ.get("BUILD_DIR", "build")
    path = os.path.join(ROOT, build, "src", "load_and_run")
    return path if os.path.exists(path) else None


def run_in_cpp(exe, model_path, images, out_dir):
    """Runs the dumped model with the C++ load_and_run; returns its probabilities."""
    image_path = os.path.join(out_dir, "test_images.npy")
    np.save(image_path, images)
    result_dir = os.path.join(out_dir, "load_and_run_outputs")
    os.makedirs(result_dir, exist_ok=True)
    cmd = [exe, model_path, "--input", f"data={image_path}", "--iters", "1", "--warmup", "0"]
    subprocess.run([*cmd, "--print", "0", "--output-dir", result_dir], check=True)
    return np.load(os.path.join(result_dir, "prob.npy"))


def main():
    parser = argparse.ArgumentParser(description="LeNet on Fashion-MNIST")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--checkpoint", default="lenet_fashion_mnist.mge")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument(
        "--max-steps", type=int, default=None, help="stop each epoch after this many steps"
    )
    parser.add_argument("--eager", action="store_true", help="run the training step op by op")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace the training step (the default; kept for old command lines)",
    )
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--out-dir", default=".", help="where the plot and the model go")
    parser.add_argument("--load-and-run", default=None, help="the C++ load_and_run to check with")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    mge.random.seed(0)
    model = LeNet()
    gm = GradManager().attach(model.parameters())
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    # Ten times smaller steps after half of the epochs, and again for the last quarter.
    milestones = sorted({max(1, args.epochs // 2), max(1, args.epochs * 3 // 4)})
    sched = optim.MultiStepLR(opt, milestones=milestones, gamma=0.1)
    start_epoch, history = 0, []
    if args.resume and os.path.exists(args.checkpoint):
        state = mge.load(args.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if "scheduler" in state:  # checkpoints of older versions of this script have none
            sched.load_state_dict(state["scheduler"])
        history = state.get("history", [])
        start_epoch = state["epoch"] + 1
        print(f"resumed from {args.checkpoint} after epoch {state['epoch'] + 1}")

    def train_step(images, labels):
        with gm:
            loss = F.nn.cross_entropy(model(images), labels)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    def predict(images):
        return F.argmax(model(images), axis=1)

    if not args.eager:
        train_step = trace(train_step)
        predict = trace(predict)

    train_loader = build_loader(True, args.batch_size, args.workers)
    test_loader = build_loader(False, 500, 0)
    test_images, test_labels = test_set(test_loader)
    t_start = time.time()
    for epoch in range(start_epoch, args.epochs):
        model.train()
        losses, t0 = [], time.time()
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False)
        for step, (images, labels) in enumerate(bar):
            if args.max_steps is not None and step >= args.max_steps:
                break
            loss = train_step(mge.Tensor(images), mge.Tensor(labels))
            losses.append(loss.item())
            if step % 20 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
        sched.step()
        model.eval()
        correct = sum(
            int(
                (
                    predict(mge.Tensor(test_images[i : i + 500])).numpy()
                    == test_labels[i : i + 500]
                ).sum()
            )
            for i in range(0, len(test_labels), 500)
        )
        accuracy = correct / len(test_labels)
        history.append(
            {"epoch": epoch + 1, "train_loss": float(np.mean(losses)), "test_accuracy": accuracy}
        )
        print(
            f"epoch {epoch + 1}: train loss {np.mean(losses):.4f}, "
            f"test accuracy {accuracy:.2%}, {time.time() - t0:.0f}s",
            flush=True,
        )
        mge.save(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "history": history,
                "epoch": epoch,
            },
            args.checkpoint,
        )
    print(f"training: {time.time() - t_start:.0f}s")
    if not history:
        return 0
    plot_path = os.path.join(args.out_dir, "curves.png")
    plot_curves(history, plot_path)
    print(f"wrote {plot_path}")

    # The inference graph: the network in eval mode with its weights as constants, on the whole
    # test set at once (the dumped input's shape).
    model.eval()

    @trace(capture_as_const=True)
    def infer(images):
        return F.softmax(model(images), axis=1)

    probs = infer(mge.Tensor(test_images)).numpy()
    model_path = os.path.join(args.out_dir, "lenet_fashion_mnist.nmeg")
    infer.dump(
        model_path, arg_names=["data"], output_names=["prob"], user_info="LeNet, Fashion-MNIST"
    )
    print(f"wrote {model_path}")
    exe = find_load_and_run(args.load_and_run)
    if exe is None:
        print("load_and_run not found (build NeoMeg first): the C++ check is skipped")
        return 0
    cpp_probs = run_in_cpp(exe, model_path, test_images, args.out_dir)
    ours, theirs = probs.argmax(1), cpp_probs.argmax(1)
    agree = int((ours == theirs).sum())
    diff = float(np.abs(probs - cpp_probs).max())
    # The C++ runtime may run other kernels (the CPU's, the graph's fusions), which round
    # differently: an image whose two best classes Python scores within that rounding is a
    # tie, and either answer is right.
    best_two = np.sort(probs[ours != theirs], axis=1)[:, -2:]
    ties = int((best_two[:, 1] - best_two[:, 0] <= 2 * diff).sum())
    print(
        f"C++ load_and_run: {agree}/{len(ours)} predictions agree with Python's, "
        f"{ties} ties within rounding (max probability difference {diff:.2e}); "
        f"C++ test accuracy {(theirs == test_labels).mean():.2%}"
    )
    return 0 if agree + ties == len(ours) and diff < 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
