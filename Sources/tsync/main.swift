print("tsync")
