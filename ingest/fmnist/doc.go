// Package fmnist reads Fashion-MNIST (Xiao, Rasul, Vollgraf,
// "Fashion-MNIST: a Novel Image Dataset for Benchmarking Machine Learning
// Algorithms", 2017): the four IDX files of 28 x 28 grey images and their
// labels, gzipped as published or plain, into one node-per-image data set
// ([Load]). Its users are `weft gen fmnist-knn` (with graph.KNN), nn's
// MLP data (nn.LoadFashionMNIST, for weft train and weft bench sapipe),
// psmode/psbench, and the tests of gnn/spgnn.
//
// It sits under ingest, where the dataset readers live, as a package of
// its own that imports none of Weft's: package nn reads Fashion-MNIST,
// and importing ingest (the readers behind `weft convert`, with their
// zstd and .npz decoders) would set nn on top of them.
//
// # Data and splits
//
// Node v has features Feat[v*Dim:(v+1)*Dim] (pixels / 255) and a label
// in [0, 10). Nodes 0..NumTrain-1 are the training file's images, the
// rest the test file's. The splits are the published ones: Train is the
// training file without its last twelfth, Valid that twelfth (55,000 and
// 5,000 for the full set), Test the test file (10,000).
//
// # IDX
//
// A big-endian header of two zero bytes, a type byte (0x08, unsigned
// byte), a dimension count and one uint32 per dimension, then the data
// in row-major order; images are magic 2051 (count x 28 x 28), labels
// 2049 (count). A file that starts with the gzip magic is gunzipped.
// Errors name the file and say what is wrong (bad magic, short file,
// sizes too large, wrong image size, counts that disagree, a label out of
// range); a header claiming more than the file holds costs no large
// allocation (the data buffer grows as bytes arrive; FuzzIDX).
//
// # Concurrency and environment
//
// Load blocks while it reads and decompresses (about 30 MB of gzip for
// the full set) on the calling goroutine; it holds no global state, so
// loads may run concurrently. Pure Go, standard library only. No
// environment variables: the data are read from the directory passed, on
// Debian [Dir] (/usr/share/datasets/fashion-mnist, package
// dataset-fashion-mnist).
package fmnist
