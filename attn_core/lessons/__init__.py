"""The compute of each lesson, one module per page, named as the page's URL.

`attn_core.lessons.masks` serves /masks, `attn_core.lessons.multi_head` serves
/multi-head, and so on. They build on the foundation one level up (attention,
softmax, masks, multihead, tiled, cost, device) and never on each other.
"""
