"""The memory lifecycle: usage signals (how the owner uses each block) and tiering (hot, warm,
cold, frozen), with one-way digests standing in for the text of old, unused blocks."""
