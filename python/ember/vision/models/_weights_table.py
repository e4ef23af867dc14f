"""torchvision 0.29.2+cu132's weights enums as data (written by scripts/vision-weights-table.py;
do not edit): per enum, each member's url, ImageClassification preset and meta, and which member
DEFAULT names. "_IMAGENET_CATEGORIES" stands for _meta's list."""

nan = float("nan")  # torchvision's metric for weights never measured on ImageNet

TABLE = {'ResNet18_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/resnet18-f37072fd.pth',
                                                    'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                    'meta': {'min_size': (1, 1),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'num_params': 11689512,
                                                             'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 69.758,
                                                                                          'acc@5': 89.078}},
                                                             '_ops': 1.814,
                                                             '_file_size': 44.661,
                                                             '_docs': 'These weights reproduce closely the results '
                                                                      'of the paper using a simple training '
                                                                      'recipe.'}}},
                      'default': 'IMAGENET1K_V1'},
 'ResNet34_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/resnet34-b627a593.pth',
                                                    'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                    'meta': {'min_size': (1, 1),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'num_params': 21797672,
                                                             'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 73.314,
                                                                                          'acc@5': 91.42}},
                                                             '_ops': 3.664,
                                                             '_file_size': 83.275,
                                                             '_docs': 'These weights reproduce closely the results '
                                                                      'of the paper using a simple training '
                                                                      'recipe.'}}},
                      'default': 'IMAGENET1K_V1'},
 'ResNet50_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/resnet50-0676ba61.pth',
                                                    'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                    'meta': {'min_size': (1, 1),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'num_params': 25557032,
                                                             'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#resnet',
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 76.13,
                                                                                          'acc@5': 92.862}},
                                                             '_ops': 4.089,
                                                             '_file_size': 97.781,
                                                             '_docs': 'These weights reproduce closely the results '
                                                                      'of the paper using a simple training '
                                                                      'recipe.'}},
                                  'IMAGENET1K_V2': {'url': 'https://download.pytorch.org/models/resnet50-11ad3fa6.pth',
                                                    'transforms': {'preset': 'ImageClassification',
                                                                   'crop_size': 224,
                                                                   'resize_size': 232},
                                                    'meta': {'min_size': (1, 1),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'num_params': 25557032,
                                                             'recipe': 'https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621',
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 80.858,
                                                                                          'acc@5': 95.434}},
                                                             '_ops': 4.089,
                                                             '_file_size': 97.79,
                                                             '_docs': '\n'
                                                                      '                These weights improve upon '
                                                                      'the results of the original paper by using '
                                                                      "TorchVision's `new training recipe\n"
                                                                      '                '
                                                                      '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.\n'
                                                                      '            '}}},
                      'default': 'IMAGENET1K_V2'},
 'AlexNet_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/alexnet-owt-7be5be79.pth',
                                                   'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                   'meta': {'num_params': 61100840,
                                                            'min_size': (63, 63),
                                                            'categories': '_IMAGENET_CATEGORIES',
                                                            'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
                                                            '_metrics': {'ImageNet-1K': {'acc@1': 56.522,
                                                                                         'acc@5': 79.066}},
                                                            '_ops': 0.714,
                                                            '_file_size': 233.087,
                                                            '_docs': '\n'
                                                                     '                These weights reproduce '
                                                                     'closely the results of the paper using a '
                                                                     'simplified training recipe.\n'
                                                                     '            '}}},
                     'default': 'IMAGENET1K_V1'},
 'VGG11_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/vgg11-8a719046.pth',
                                                 'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                 'meta': {'min_size': (32, 32),
                                                          'categories': '_IMAGENET_CATEGORIES',
                                                          'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
                                                          '_docs': 'These weights were trained from scratch by using '
                                                                   'a simplified training recipe.',
                                                          'num_params': 132863336,
                                                          '_metrics': {'ImageNet-1K': {'acc@1': 69.02,
                                                                                       'acc@5': 88.628}},
                                                          '_ops': 7.609,
                                                          '_file_size': 506.84}}},
                   'default': 'IMAGENET1K_V1'},
 'VGG11_BN_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/vgg11_bn-6002323d.pth',
                                                    'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                    'meta': {'min_size': (32, 32),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
                                                             '_docs': 'These weights were trained from scratch by '
                                                                      'using a simplified training recipe.',
                                                             'num_params': 132868840,
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 70.37,
                                                                                          'acc@5': 89.81}},
                                                             '_ops': 7.609,
                                                             '_file_size': 506.881}}},
                      'default': 'IMAGENET1K_V1'},
 'VGG16_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/vgg16-397923af.pth',
                                                 'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                 'meta': {'min_size': (32, 32),
                                                          'categories': '_IMAGENET_CATEGORIES',
                                                          'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
                                                          '_docs': 'These weights were trained from scratch by using '
                                                                   'a simplified training recipe.',
                                                          'num_params': 138357544,
                                                          '_metrics': {'ImageNet-1K': {'acc@1': 71.592,
                                                                                       'acc@5': 90.382}},
                                                          '_ops': 15.47,
                                                          '_file_size': 527.796}},
                               'IMAGENET1K_FEATURES': {'url': 'https://download.pytorch.org/models/vgg16_features-amdegroot-88682ab5.pth',
                                                       'transforms': {'preset': 'ImageClassification',
                                                                      'crop_size': 224,
                                                                      'mean': (0.48235, 0.45882, 0.40784),
                                                                      'std': (0.00392156862745098,
                                                                              0.00392156862745098,
                                                                              0.00392156862745098)},
                                                       'meta': {'min_size': (32, 32),
                                                                'categories': None,
                                                                'recipe': 'https://github.com/amdegroot/ssd.pytorch#training-ssd',
                                                                '_docs': '\n'
                                                                         "                These weights can't be "
                                                                         'used for classification because they are '
                                                                         'missing values in the `classifier`\n'
                                                                         '                module. Only the '
                                                                         '`features` module has valid values and can '
                                                                         'be used for feature extraction. The '
                                                                         'weights\n'
                                                                         '                were trained using the '
                                                                         'original input standardization method as '
                                                                         'described in the paper.\n'
                                                                         '            ',
                                                                'num_params': 138357544,
                                                                '_metrics': {'ImageNet-1K': {'acc@1': nan,
                                                                                             'acc@5': nan}},
                                                                '_ops': 15.47,
                                                                '_file_size': 527.802}}},
                   'default': 'IMAGENET1K_V1'},
 'VGG16_BN_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/vgg16_bn-6c64b313.pth',
                                                    'transforms': {'preset': 'ImageClassification', 'crop_size': 224},
                                                    'meta': {'min_size': (32, 32),
                                                             'categories': '_IMAGENET_CATEGORIES',
                                                             'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg',
                                                             '_docs': 'These weights were trained from scratch by '
                                                                      'using a simplified training recipe.',
                                                             'num_params': 138365992,
                                                             '_metrics': {'ImageNet-1K': {'acc@1': 73.36,
                                                                                          'acc@5': 91.516}},
                                                             '_ops': 15.47,
                                                             '_file_size': 527.866}}},
                      'default': 'IMAGENET1K_V1'},
 'MobileNet_V2_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/mobilenet_v2-b0353104.pth',
                                                        'transforms': {'preset': 'ImageClassification',
                                                                       'crop_size': 224},
                                                        'meta': {'num_params': 3504872,
                                                                 'min_size': (1, 1),
                                                                 'categories': '_IMAGENET_CATEGORIES',
                                                                 'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv2',
                                                                 '_metrics': {'ImageNet-1K': {'acc@1': 71.878,
                                                                                              'acc@5': 90.286}},
                                                                 '_ops': 0.301,
                                                                 '_file_size': 13.555,
                                                                 '_docs': 'These weights reproduce closely the '
                                                                          'results of the paper using a simple '
                                                                          'training recipe.'}},
                                      'IMAGENET1K_V2': {'url': 'https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth',
                                                        'transforms': {'preset': 'ImageClassification',
                                                                       'crop_size': 224,
                                                                       'resize_size': 232},
                                                        'meta': {'num_params': 3504872,
                                                                 'min_size': (1, 1),
                                                                 'categories': '_IMAGENET_CATEGORIES',
                                                                 'recipe': 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning',
                                                                 '_metrics': {'ImageNet-1K': {'acc@1': 72.154,
                                                                                              'acc@5': 90.822}},
                                                                 '_ops': 0.301,
                                                                 '_file_size': 13.598,
                                                                 '_docs': '\n'
                                                                          '                These weights improve '
                                                                          'upon the results of the original paper by '
                                                                          'using a modified version of '
                                                                          "TorchVision's\n"
                                                                          '                `new training recipe\n'
                                                                          '                '
                                                                          '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.\n'
                                                                          '            '}}},
                          'default': 'IMAGENET1K_V2'},
 'MobileNet_V3_Small_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth',
                                                              'transforms': {'preset': 'ImageClassification',
                                                                             'crop_size': 224},
                                                              'meta': {'min_size': (1, 1),
                                                                       'categories': '_IMAGENET_CATEGORIES',
                                                                       'num_params': 2542856,
                                                                       'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small',
                                                                       '_metrics': {'ImageNet-1K': {'acc@1': 67.668,
                                                                                                    'acc@5': 87.402}},
                                                                       '_ops': 0.057,
                                                                       '_file_size': 9.829,
                                                                       '_docs': '\n'
                                                                                '                These weights '
                                                                                'improve upon the results of the '
                                                                                'original paper by using a simple '
                                                                                'training recipe.\n'
                                                                                '            '}}},
                                'default': 'IMAGENET1K_V1'},
 'MobileNet_V3_Large_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/mobilenet_v3_large-8738ca79.pth',
                                                              'transforms': {'preset': 'ImageClassification',
                                                                             'crop_size': 224},
                                                              'meta': {'min_size': (1, 1),
                                                                       'categories': '_IMAGENET_CATEGORIES',
                                                                       'num_params': 5483032,
                                                                       'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small',
                                                                       '_metrics': {'ImageNet-1K': {'acc@1': 74.042,
                                                                                                    'acc@5': 91.34}},
                                                                       '_ops': 0.217,
                                                                       '_file_size': 21.114,
                                                                       '_docs': 'These weights were trained from '
                                                                                'scratch by using a simple training '
                                                                                'recipe.'}},
                                            'IMAGENET1K_V2': {'url': 'https://download.pytorch.org/models/mobilenet_v3_large-5c1a4163.pth',
                                                              'transforms': {'preset': 'ImageClassification',
                                                                             'crop_size': 224,
                                                                             'resize_size': 232},
                                                              'meta': {'min_size': (1, 1),
                                                                       'categories': '_IMAGENET_CATEGORIES',
                                                                       'num_params': 5483032,
                                                                       'recipe': 'https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning',
                                                                       '_metrics': {'ImageNet-1K': {'acc@1': 75.274,
                                                                                                    'acc@5': 92.566}},
                                                                       '_ops': 0.217,
                                                                       '_file_size': 21.107,
                                                                       '_docs': '\n'
                                                                                '                These weights '
                                                                                'improve marginally upon the results '
                                                                                'of the original paper by using a '
                                                                                'modified version of\n'
                                                                                "                TorchVision's `new "
                                                                                'training recipe\n'
                                                                                '                '
                                                                                '<https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.\n'
                                                                                '            '}}},
                                'default': 'IMAGENET1K_V2'},
 'EfficientNet_B0_Weights': {'members': {'IMAGENET1K_V1': {'url': 'https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth',
                                                           'transforms': {'preset': 'ImageClassification',
                                                                          'crop_size': 224,
                                                                          'resize_size': 256,
                                                                          'interpolation': 'bicubic'},
                                                           'meta': {'categories': '_IMAGENET_CATEGORIES',
                                                                    'min_size': (1, 1),
                                                                    'recipe': 'https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1',
                                                                    'num_params': 5288548,
                                                                    '_metrics': {'ImageNet-1K': {'acc@1': 77.692,
                                                                                                 'acc@5': 93.532}},
                                                                    '_ops': 0.386,
                                                                    '_file_size': 20.451,
                                                                    '_docs': 'These weights are ported from the '
                                                                             'original paper.'}}},
                             'default': 'IMAGENET1K_V1'}}
