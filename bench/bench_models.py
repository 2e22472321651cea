"""The CIFAR-style models the training benchmarks time (LeNet, ResNet-18, a MobileNet v1 of
depthwise-separable blocks), as source text for their worker scripts.

A worker runs under NeoMeg or PyTorch and defines ``Module``, ``nn``, ``relu``, ``flatten``,
``pool`` and ``avgpool`` for its framework before this text, so both frameworks run the same
model definition (``bench/train_step.py``, ``bench/amp.py``).
"""

MODELS = r"""
class LeNet(Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(256, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = pool(relu(self.conv1(x)), 2)
        x = pool(relu(self.conv2(x)), 2)
        return self.fc3(relu(self.fc2(relu(self.fc1(flatten(x))))))


class Block(Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(relu(self.bn1(self.conv1(x)))))
        return relu(y + (x if self.down is None else self.down(x)))


class ResNet18(Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cfg = [(64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1),
               (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1)]
        self.blocks = nn.Sequential(*[Block(*c) for c in cfg])
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc(avgpool(self.blocks(relu(self.bn1(self.conv1(x))))))


class DepthwiseBlock(Module):
    # MobileNet v1's unit: a 3x3 depthwise convolution, then a 1x1 pointwise one, each followed
    # by BatchNorm and relu.
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        return relu(self.bn2(self.pw(relu(self.bn1(self.dw(x))))))


class MobileNet(Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
               (256, 512, 2), (512, 512, 1)]
        self.blocks = nn.Sequential(*[DepthwiseBlock(*c) for c in cfg])
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc(avgpool(self.blocks(relu(self.bn1(self.conv1(x))))))


"""

# A BERT-mini style encoder for sequence classification: token and position embeddings, four
# post-LayerNorm layers (hidden 256, 4 heads, FFN 1024, GELU, dropout 0.1) and a linear head on
# the first token. A worker defines ``Module``, ``nn``, ``gelu``, ``softmax`` (last axis),
# ``permute`` (axes reordered), ``matmul_nt`` (a @ b^T over the trailing two axes) and
# ``arange`` for its framework before this text.
TRANSFORMER = r"""
class Attention(Module):
    def __init__(self, hidden, heads, p):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
        self.o = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads

        def split(t):
            return permute(t.reshape(b, s, self.heads, d), 0, 2, 1, 3)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        probs = self.drop(softmax(matmul_nt(q, k) * (1.0 / d**0.5)))
        ctx = permute(probs @ v, 0, 2, 1, 3).reshape(b, s, h)
        return self.o(ctx)


class EncoderLayer(Module):
    def __init__(self, hidden, heads, ffn, p):
        super().__init__()
        self.attn = Attention(hidden, heads, p)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.drop1, self.drop2 = nn.Dropout(p), nn.Dropout(p)

    def forward(self, x):
        x = self.ln1(x + self.drop1(self.attn(x)))
        return self.ln2(x + self.drop2(self.fc2(gelu(self.fc1(x)))))


class Encoder(Module):
    def __init__(self, vocab=30522, seq=128, hidden=256, layers=4, heads=4, ffn=1024,
                 classes=2, p=0.1):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.drop = nn.Dropout(p)
        self.layers = nn.Sequential(*[EncoderLayer(hidden, heads, ffn, p) for _ in range(layers)])
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(arange(ids.shape[1]))
        x = self.layers(self.drop(self.ln(x)))
        return self.head(x[:, 0])
"""
