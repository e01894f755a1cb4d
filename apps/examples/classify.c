/* Example 6: call an exported predictor from C, without glia. `glia export` wrote the
 * trained MNIST MLP as mnist/mnist_mlp.{h,c} and built mnist/libmnist_mlp.so; this program
 * reads the MNIST test split's IDX files, classifies every image and prints the accuracy.
 *   glia export --checkpoint mnist_mlp.h5 --name mnist_mlp --batch 1 --output mnist
 *   cc -O2 -std=c11 classify.c -I mnist -L mnist -lmnist_mlp -Wl,-rpath,"$PWD/mnist" -o classify
 *   ./classify data/mnist/t10k-images-idx3-ubyte data/mnist/t10k-labels-idx1-ubyte */
#include <stdint.h>
#include <stdio.h>

#include "mnist_mlp.h"

static uint32_t be32(const unsigned char* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s IMAGES LABELS (IDX files)\n", argv[0]);
    return 2;
  }
  FILE* fi = fopen(argv[1], "rb");
  FILE* fl = fopen(argv[2], "rb");
  unsigned char hi[16], hl[8];
  if (!fi || !fl || fread(hi, 1, 16, fi) != 16 || fread(hl, 1, 8, fl) != 8 || be32(hi) != 0x803 ||
      be32(hl) != 0x801 || be32(hi + 4) != be32(hl + 4) || be32(hi + 8) * be32(hi + 12) != 784) {
    fprintf(stderr, "cannot read the IDX files\n");
    return 1;
  }
  const uint32_t n = be32(hi + 4);
  float input[mnist_mlp_INPUT_SIZE], output[mnist_mlp_OUTPUT_SIZE];
  unsigned char pixels[784], label;
  uint32_t right = 0, i;
  int j;
  printf("%s\n", mnist_mlp_info());
  for (i = 0; i < n; ++i) {
    if (fread(pixels, 1, 784, fi) != 784 || fread(&label, 1, 1, fl) != 1) return 1;
    for (j = 0; j < 784; ++j) input[j] = pixels[j] / 255.0f; /* as glia train saw them */
    if (mnist_mlp_predict(input, output) != 0) return 1;
    int best = 0;
    for (j = 1; j < 10; ++j)
      if (output[j] > output[best]) best = j;
    right += best == label;
  }
  printf("accuracy %.4f on %u images\n", (double)right / n, n);
  fclose(fi);
  fclose(fl);
  return 0;
}
