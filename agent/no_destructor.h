// Static storage for an object that is constructed once and never destroyed.
//
// The agent's globals must outlive every static destructor of the job: hooks
// and exit handlers can run during static destruction, after an ordinary
// global would already be gone.
#pragma once

#include <new>
#include <utility>

namespace tcgd::agent {

template <typename T>
class NoDestructor {
 public:
  template <typename... Args>
  explicit NoDestructor(Args&&... args) {
    new (storage_) T(std::forward<Args>(args)...);
  }
  NoDestructor(const NoDestructor&) = delete;
  NoDestructor& operator=(const NoDestructor&) = delete;

  T* get() { return std::launder(reinterpret_cast<T*>(storage_)); }
  T& operator*() { return *get(); }
  T* operator->() { return get(); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace tcgd::agent
