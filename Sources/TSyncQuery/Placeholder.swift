// Placeholder so the target builds; replaced as the library grows.
