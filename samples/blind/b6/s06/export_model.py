"""One-off: build the small defect classifier and export it to ONNX next to the service."""
import sys

import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 5, stride=4, padding=2), torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 4)).eval()
torch.onnx.export(net, torch.randn(1, 3, 224, 224), sys.argv[1], input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, dynamo=False)
