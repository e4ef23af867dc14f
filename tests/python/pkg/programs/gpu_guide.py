"""The training loop the PyTorch GPU guides teach, written against torch and torchvision: print the
versions, pick `cuda:0` when available, an AlexNet for 32x32 images, `net.to(device)`,
`criterion.to(device)`, CIFAR10(download=True), `Variable(img.cuda())`. tests/python/pkg/
test_programs.py runs it on ember with only its imports changed."""
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--root", default="./data")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=1e-2)
args = parser.parse_args()

print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("cuda available:", torch.cuda.is_available())
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class AlexNet(nn.Module):
    def __init__(self, num_classes=10):
        super(AlexNet, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(64, 192, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(), nn.Linear(256 * 2 * 2, 4096), nn.ReLU(inplace=True),
            nn.Dropout(), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), 256 * 2 * 2)
        return self.classifier(x)


data_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])
train_dataset = datasets.CIFAR10(root=args.root, train=True, transform=data_tf, download=True)
test_dataset = datasets.CIFAR10(root=args.root, train=False, transform=data_tf)
train_loader = DataLoader(train_dataset, batch_size=64, shuffle=True)
test_loader = DataLoader(test_dataset, batch_size=64, shuffle=False)

net = AlexNet()
net.to(device)
criterion = nn.CrossEntropyLoss()
criterion.to(device)
optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)

for epoch in range(args.epochs):
    net.train()
    running_loss, seen = 0.0, 0
    for img, label in train_loader:
        if torch.cuda.is_available():
            img = Variable(img.cuda())
            label = Variable(label.cuda())
        else:
            img = Variable(img)
            label = Variable(label)
        out = net(img)
        loss = criterion(out, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * label.size(0)
        seen += label.size(0)
    print("epoch {} loss {:.4f}".format(epoch + 1, running_loss / seen))

net.eval()
correct, total = 0, 0
with torch.no_grad():
    for img, label in test_loader:
        img, label = img.to(device), label.to(device)
        _, predicted = torch.max(net(img).data, 1)
        total += label.size(0)
        correct += (predicted == label).sum().item()
print("test accuracy {:.4f}".format(correct / total))
